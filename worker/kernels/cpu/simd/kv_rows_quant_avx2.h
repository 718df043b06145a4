// The KV row kernels of the 4-bit and 3.5-bit storage types (q4_0, q3_nl) on
// AVX2 + FMA + F16C, written once over a policy P that turns one stored
// 32-value block into its 32 signed-byte levels:
//   Block                            the stored block (with an f16 scale d)
//   Unpack(const Block&) -> __m256i  its levels, in element order
// Each block's dot product with the q8_0 query is an exact integer sum,
// scaled by the two blocks' scales. Include only from files compiled for
// AVX2: everything here has internal linkage.
#pragma once

#include "worker/kernels/cpu/simd/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

template <typename P>
float DotQuantRow(int64_t n, const void* k, const void* q) {
  const auto* kb = static_cast<const typename P::Block*>(k);
  const auto* qb = static_cast<const kernels::BlockQ8_0*>(q);
  const int64_t num_blocks = n / kernels::kLegacyBlockSize;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb[b].qs));
    const __m256 scale = _mm256_set1_ps(HalfToFloatF16c(kb[b].d) * HalfToFloatF16c(qb[b].d));
    acc = _mm256_fmadd_ps(DotBytes(P::Unpack(kb[b]), qv), scale, acc);
  }
  return HorizontalSum(acc);
}

template <typename P>
void AccumulateQuantRow(int64_t n, const void* v, float weight, float* out) {
  const auto* vb = static_cast<const typename P::Block*>(v);
  const int64_t num_blocks = n / kernels::kLegacyBlockSize;
  alignas(32) int8_t levels[kernels::kLegacyBlockSize];
  for (int64_t b = 0; b < num_blocks; ++b) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(levels), P::Unpack(vb[b]));
    const __m256 scale = _mm256_set1_ps(weight * HalfToFloatF16c(vb[b].d));
    float* o = out + b * kernels::kLegacyBlockSize;
    for (int g = 0; g < kernels::kLegacyBlockSize; g += 8)
      AccumulateBytes8(levels + g, scale, o + g);
  }
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2
