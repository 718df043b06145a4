// The tensor element types a GGUF file can hold (ggml's numbering), with the
// block geometry needed to size a tensor. Which types the engine can *compute*
// with is a separate question answered by worker/kernels/cpu/type_traits.h; this
// table only lets the reader validate and describe any file.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kvmesh {

enum class TensorType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,
  kIQ2_XXS = 16,
  kIQ2_XS = 17,
  kIQ3_XXS = 18,
  kIQ1_S = 19,
  kIQ4_NL = 20,
  kIQ3_S = 21,
  kIQ2_S = 22,
  kIQ4_XS = 23,
  kI8 = 24,
  kI16 = 25,
  kI32 = 26,
  kI64 = 27,
  kF64 = 28,
  kIQ1_M = 29,
  kBF16 = 30,
  kTQ1_0 = 34,
  kTQ2_0 = 35,
  kMXFP4 = 39,
  // Not a GGUF type: KV pages only (worker/kernels/cpu/block_types.h,
  // BlockQ3_NL). Files never hold it; the reader and the writer refuse it.
  kQ3_NL = 63,
};

struct TensorTypeInfo {
  std::string_view name;     // "Q4_K"
  uint32_t block_size;       // elements per block
  uint32_t bytes_per_block;  // bytes per block
};

// Geometry of a type id as found in a file; nullopt for ids that no known
// writer produces (including the retired ids 4, 5, 31-33 and 36-38).
std::optional<TensorTypeInfo> LookupTensorType(uint32_t type_id);

// True for the types only KV pages use (kQ3_NL), which no file may hold.
inline bool IsKvOnlyTensorType(uint32_t type_id) {
  return type_id == static_cast<uint32_t>(TensorType::kQ3_NL);
}

// Name for messages; "type#<id>" for unknown ids.
std::string TensorTypeName(uint32_t type_id);
inline std::string TensorTypeName(TensorType t) { return TensorTypeName(static_cast<uint32_t>(t)); }

// Parses "q4_0", "Q4_K", "f16", "bf16" … (case-insensitive).
std::optional<TensorType> ParseTensorType(std::string_view name);

// Bytes needed for one row of `n` elements, or nullopt if `n` is not a whole
// number of blocks.
std::optional<uint64_t> RowBytes(TensorType type, uint64_t n);

}  // namespace kvmesh
