// Declarations of the x86 KV row kernels (see kv_row_kernels.h). Each is
// defined in kv_rows_<type>_<isa>.cc and may only be called when the CPU has
// that ISA. Internal to the CPU runtime and its tests.
#pragma once

#include <cstdint>

namespace kvmesh::kv_rows {

// AVX2 + FMA + F16C.
namespace avx2 {
float DotF32(int64_t n, const void* k, const void* q);
void AccumulateF32(int64_t n, const void* v, float weight, float* out);
float DotF16(int64_t n, const void* k, const void* q);
void AccumulateF16(int64_t n, const void* v, float weight, float* out);
float DotBf16(int64_t n, const void* k, const void* q);
void AccumulateBf16(int64_t n, const void* v, float weight, float* out);
float DotQ8_0(int64_t n, const void* k, const void* q);
void AccumulateQ8_0(int64_t n, const void* v, float weight, float* out);
float DotQ4_0(int64_t n, const void* k, const void* q);  // q is Q8_0
void AccumulateQ4_0(int64_t n, const void* v, float weight, float* out);
}  // namespace avx2

// AVX-512 F + BW + VL (and FMA, F16C).
namespace avx512 {
float DotF32(int64_t n, const void* k, const void* q);
void AccumulateF32(int64_t n, const void* v, float weight, float* out);
float DotF16(int64_t n, const void* k, const void* q);
void AccumulateF16(int64_t n, const void* v, float weight, float* out);
float DotBf16(int64_t n, const void* k, const void* q);
void AccumulateBf16(int64_t n, const void* v, float weight, float* out);
float DotQ8_0(int64_t n, const void* k, const void* q);
void AccumulateQ8_0(int64_t n, const void* v, float weight, float* out);
float DotQ4_0(int64_t n, const void* k, const void* q);  // q is Q8_0
void AccumulateQ4_0(int64_t n, const void* v, float weight, float* out);
// KvBlockKernels of f16 rows (kv_attention_f16_avx512.cc): head_dim 64 and
// 128 for scores, multiples of 64 for weighted sums.
bool ScoresF16(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query, int n_q,
               float scale, float* scores, float* max_score);
bool WeightedSumF16(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
                    int n_q, float* out);
}  // namespace avx512

}  // namespace kvmesh::kv_rows
