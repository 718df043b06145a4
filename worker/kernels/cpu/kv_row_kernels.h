// The two row operations attention performs on KV pages, per storage type and
// instruction set:
//
//   dot:        score = K row · query, with the query already converted to the
//               K type's vec_dot_type (f32→f32, f16→f16, bf16→bf16,
//               q8_0→q8_0, q4_0→q8_0, q3_nl→q8_0), exactly the pairing of the reference
//               vec_dot in worker/kernels/cpu/type_traits.h;
//   accumulate: out[0..n) += weight · V row.
//
// Both read the row in its stored form (no page is ever dequantized as a
// whole). The scalar variants are the reference: dot is the reference
// vec_dot and accumulate is the reference to_float followed by a float axpy.
// The AVX2 (+FMA, F16C) and AVX-512 (F, BW, VL) variants live in one file per
// (type, ISA), types/<type>_kv_<isa>.cc, each compiled with its own -m flags,
// and are tested against the scalar ones (kv_row_kernels_test.cc). They sum
// in a different order, so results differ by float rounding only.
//
// The table is immutable; every function is pure and thread-safe.
#pragma once

#include <cstdint>
#include <string_view>

#include "common/tensor_type.h"
#include "worker/kernels/cpu/cpu_features.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh {

// out[0..n) += weight * row[0..n), row being n elements of a storage type.
using KvAccumulateFn = void (*)(int64_t n, const void* row, float weight, float* out);

struct KvRowKernels {
  kernels::VecDotFn dot;
  KvAccumulateFn accumulate;
  kernels::Isa isa;  // the ISA these functions actually use
};

// The kernels for rows of `type` (a KV storage type, see IsKvStorageType) on
// the widest ISA not above `isa` that this build has; nullptr for other types.
const KvRowKernels* GetKvRowKernels(TensorType type, kernels::Isa isa);

// Attention's two walks over positions, a block of positions at a time, for
// rows of one storage type. They give, bit for bit, the floats of the walks
// with the row kernels of the same ISA: each score is dot(K row, query) *
// scale, and each output is 0 plus weight · V row, position by position (the
// block form only shares row loads and lane reductions between positions and
// heads).
struct KvBlockKernels {
  // scores[g * n_ctx + j] = dot(K row j, query g) * scale and max_score[g] =
  // the largest scores[g * n_ctx + j], for g < n_q, j < n_ctx; `query` holds
  // n_q rows of the type's vec_dot_type. Returns false, writing nothing, for a
  // head_dim it does not handle.
  bool (*scores)(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query,
                 int n_q, float scale, float* scores, float* max_score);
  // out[g * head_dim + d] = sum over j < n_ctx of weights[g * weights_stride
  // + j] · (V row j)[d], for g < n_q (weights_stride >= n_ctx). Returns false,
  // writing nothing, for a head_dim it does not handle.
  bool (*weighted_sum)(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
                       int64_t weights_stride, int n_q, float* out);
};

// The block kernels for rows of `type` on `isa`, or nullptr where there are
// none (then attention walks positions with the row kernels). Every KV type
// has them on AVX2 and AVX-512; the scalar tier has none.
const KvBlockKernels* GetKvBlockKernels(TensorType type, kernels::Isa isa);

}  // namespace kvmesh
