// Which tensor types the engine can compute with, and the scalar reference
// kernels for each.
//
// A matrix-vector product W·x over weights of type T works like ggml's CPU
// backend: the float activations x are first converted to T's vec_dot_type
// (e.g. Q8_K for Q4_K weights) with that type's from_float, then each weight
// row is combined with the converted x by T's vec_dot. Following the same
// pairing as llama.cpp makes our activations round the same way, so logits
// track llama.cpp's closely.
//
// All lengths `n` are element counts and must be a whole number of blocks
// (multiple of block_size); the kernels CHECK this. Every function is pure
// (no state, no allocation) and safe to call from any thread. The table is
// immutable and lives for the whole process.
//
// Each SIMD tier (cpu_features.h) has its own table with the same types and
// pairings, whose functions are that tier's kernels where one exists and the
// scalar references otherwise. GetTypeTraits(type) is the table of
// ActiveIsa() - what the engine runs; GetReferenceTypeTraits(type) is the
// scalar table the SIMD variants are tested against (kernel_parity.h,
// kernel_records.h for what "equal" means per type). The tables are built
// from the records of the types in type_list.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tensor_type.h"
#include "worker/kernels/cpu/cpu_features.h"

namespace kvmesh::kernels {

// Decodes n elements (a whole number of blocks) of this type into floats.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
// Encodes n floats (a whole number of blocks) into this type.
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);
// Dot product of n elements: `w` is a row of this type, `x` a row of its
// vec_dot_type.
using VecDotFn = float (*)(int64_t n, const void* w, const void* x);

struct TypeTraits {
  TensorType type;
  // The type activations are converted to before vec_dot.
  TensorType vec_dot_type;
  int64_t block_size;      // elements per block
  size_t bytes_per_block;  // bytes per block
  ToFloatFn to_float;
  FromFloatFn from_float;
  // Null for the activation-only types Q8_1 and Q8_K, which never appear as
  // weights.
  VecDotFn vec_dot;
};

// Traits of `type` for ActiveIsa(), or nullptr if the engine cannot compute
// with it.
const TypeTraits* GetTypeTraits(TensorType type);

// Traits of `type` for tier `isa`, which must be supported by the host
// (IsaSupported) before its functions are called.
const TypeTraits* GetTypeTraits(TensorType type, Isa isa);

// The scalar references: GetTypeTraits(type, Isa::kScalar).
const TypeTraits* GetReferenceTypeTraits(TensorType type);

// Bytes of one row of n elements of this type (n a whole number of blocks).
inline size_t RowSizeBytes(const TypeTraits& traits, int64_t n) {
  return static_cast<size_t>(n / traits.block_size) * traits.bytes_per_block;
}

}  // namespace kvmesh::kernels
