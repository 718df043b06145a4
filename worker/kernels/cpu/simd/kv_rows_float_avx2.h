// The dot product and accumulate of KV rows stored as floats of any width
// (f32, f16, bf16) on AVX2 + FMA: the types differ only in how stored values
// widen to floats, which a policy P gives:
//   Element                  the stored type
//   Load(const Element*)     8 values as floats
//   Scalar(Element)          one value as a float (the tail)
// (F32, F16 and Bf16 below).
// Products and sums are in float, two accumulators, a scalar tail.
// Include only from files compiled for AVX2: everything here has internal
// linkage, so no copy of it can reach another tier's code.
#pragma once

#include "worker/kernels/cpu/simd/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

// The policies of the three float storage types.
struct F32 {
  using Element = float;
  static __m256 Load(const float* p) { return _mm256_loadu_ps(p); }
  static float Scalar(float x) { return x; }
};

// Halves widen to floats exactly (F16C).
struct F16 {
  using Element = uint16_t;
  static __m256 Load(const uint16_t* h) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
  }
  static float Scalar(uint16_t h) { return HalfToFloatF16c(h); }
};

// A bf16 is the top half of an f32, so widening is a 16-bit shift.
struct Bf16 {
  using Element = uint16_t;
  static __m256 Load(const uint16_t* b) {
    const __m256i wide =
        _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }
  static float Scalar(uint16_t b) { return Bf16ToFloatBits(b); }
};

template <typename P>
float DotFloatRow(int64_t n, const void* k, const void* q) {
  const auto* a = static_cast<const typename P::Element*>(k);
  const auto* b = static_cast<const typename P::Element*>(q);
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(P::Load(a + i), P::Load(b + i), acc0);
    acc1 = _mm256_fmadd_ps(P::Load(a + i + 8), P::Load(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(P::Load(a + i), P::Load(b + i), acc0);
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += P::Scalar(a[i]) * P::Scalar(b[i]);
  return sum;
}

template <typename P>
void AccumulateFloatRow(int64_t n, const void* v, float weight, float* out) {
  const auto* x = static_cast<const typename P::Element*>(v);
  const __m256 w = _mm256_set1_ps(weight);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(P::Load(x + i), w, _mm256_loadu_ps(out + i)));
  }
  for (; i < n; ++i) out[i] += weight * P::Scalar(x[i]);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2
