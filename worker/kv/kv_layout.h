// KvLayout: the geometry of the paged KV cache — how many layers, heads and
// dimensions a page holds, in which storage type, and how pages are laid out
// in memory. Shared by the cache manager (which only counts blocks) and the
// executors (which own the page memory).
//
// A block holds `block_size` consecutive token positions of one sequence for
// every layer. Per layer, the K pages form one array
//   [num_blocks][block_size][n_head_kv] rows of head_dim elements of k_type
// (V likewise), so a (block, slot, head) row is found by arithmetic alone, and
// each device of a layer split can hold just its own layers' arrays.
//
// Storage types: f32 (reference), f16, bf16, q8_0 and q4_0, chosen separately
// for K and V. K may additionally be transformed before it is stored (see
// worker/kv/kv_transform.h): centered (a per-(layer, KV head, channel) mean
// from a calibration file is subtracted) and/or rotated (K and every query are
// multiplied by the orthonormal Hadamard matrix). Neither changes an attention
// weight in exact arithmetic; both shrink what a 4-bit K quantizer has to
// represent. Pages are written once, in the final transformed and quantized
// form, and read as they are.
//
// A KvLayout is a value; copies share the (immutable) bias table.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "common/status.h"
#include "common/tensor_type.h"

namespace kvmesh {

class KvBias;  // worker/kv/kv_bias.h

inline constexpr int kDefaultBlockSize = 16;

// How rows are rounded into a quantized page (see
// worker/runtime/cpu/kv_quantizer.h). Only q4_0 has a choice.
enum class KvRounding {
  kMinError,   // least squared error per block (kvmesh's default)
  kReference,  // the format's reference rounding (ggml's)
};

struct KvLayout {
  int n_layer = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int block_size = kDefaultBlockSize;
  TensorType k_type = TensorType::kF16;
  TensorType v_type = TensorType::kF16;
  // Mean of K subtracted before K is stored; null stores K as computed. Must
  // have this layout's shape (Validate checks).
  std::shared_ptr<const KvBias> k_bias = nullptr;
  // K (after centering) and each query are multiplied by the orthonormal
  // Hadamard matrix of size head_dim, which must be a power of two.
  bool k_rotated = false;
  // V is stored multiplied by that matrix; each head's attention output is
  // multiplied by it again (it is its own inverse).
  bool v_rotated = false;
  KvRounding rounding = KvRounding::kMinError;
  // Window pages: when positive, the model's sliding-window layers keep
  // pages of their own, this many blocks, addressed by each sequence's
  // window table (SequenceChunk::window_table), so that the blocks a
  // sequence's window has passed can be released (KvCacheManager's window
  // pool). 0: every layer's pages are addressed by the block table.
  int64_t window_blocks = 0;

  bool k_centered() const { return k_bias != nullptr; }

  size_t k_row_bytes() const;  // one head of one token
  size_t v_row_bytes() const;
  size_t k_block_bytes() const { return k_row_bytes() * n_head_kv * block_size; }
  size_t v_block_bytes() const { return v_row_bytes() * n_head_kv * block_size; }
  // K and V bytes of one token across all layers.
  size_t bytes_per_token() const {
    return (k_row_bytes() + v_row_bytes()) * static_cast<size_t>(n_head_kv) * n_layer;
  }
  size_t bytes_per_block() const { return bytes_per_token() * block_size; }

  // Checks the sizes are positive, the storage types are KV types that can
  // hold rows of head_dim (e.g. 32-element quant blocks need head_dim % 32 ==
  // 0), rotation has a power-of-two head size and the bias table has this
  // layout's shape. Messages say what to change.
  Status Validate() const;
  // "q4_0" or "q4_0+rotate" when K and V are stored alike, else e.g.
  // "k=q4_0+center+rotate,v=f16"; what `--json` outputs report.
  std::string TypeName() const;
  std::string ToString() const;
};

// Whether `type` can be a KV storage type (f32, f16, bf16, q8_0, q4_0, q3_nl).
bool IsKvStorageType(TensorType type);

}  // namespace kvmesh
