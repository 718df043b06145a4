// The dot product and accumulate of KV rows stored as floats of any width
// (f32, f16, bf16) on AVX-512: the types differ only in how 16 stored values
// widen to 16 floats, which a policy P gives:
//   Element                          the stored type
//   Load(const Element*)             16 values as floats
//   LoadTail(__mmask16, const Element*)  the masked lanes, others 0
// (F32, F16 and Bf16 below).
// Products and sums are in float, two accumulators, tails by masked loads.
// Include only from files compiled for AVX-512: everything here has internal
// linkage, so no copy of it can reach another tier's code.
#pragma once

#include "worker/kernels/cpu/simd/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

// The sum of a vector's 16 lanes, in a fixed tree: lanes i and i + 8, then
// i and i + 4, i and i + 2, i and i + 1. SumLanes16 forms the same sums for
// 16 vectors at once, so a dot product is the same float whether it is
// reduced alone or in a block of 16.
inline float SumLanes(__m512 v) {
  const __m256 s8 = _mm256_add_ps(_mm512_castps512_ps256(v),
                                  _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  const __m128 s4 = _mm_add_ps(_mm256_castps256_ps128(s8), _mm256_extractf128_ps(s8, 1));
  const __m128 s2 = _mm_add_ps(s4, _mm_movehl_ps(s4, s4));
  return _mm_cvtss_f32(_mm_add_ss(s2, _mm_movehdup_ps(s2)));
}

// r[i] = SumLanes(v[i]) for i < 16, with the same additions (each add of two
// lanes is commutative, so only the tree matters), arranged as a transpose.
inline __m512 SumLanes16(const __m512 v[16]) {
  // Lanes i + i + 8: vector m holds those of v[2m] (lanes 0-7) and v[2m+1].
  __m512 s8[8];
  for (int m = 0; m < 8; ++m) {
    s8[m] = _mm512_add_ps(_mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0x44),
                          _mm512_shuffle_f32x4(v[2 * m], v[2 * m + 1], 0xEE));
  }
  // Lanes i + i + 4: vector m holds 4 lanes each of v[4m .. 4m+3].
  __m512 s4[4];
  for (int m = 0; m < 4; ++m) {
    s4[m] = _mm512_add_ps(_mm512_shuffle_f32x4(s8[2 * m], s8[2 * m + 1], 0x88),
                          _mm512_shuffle_f32x4(s8[2 * m], s8[2 * m + 1], 0xDD));
  }
  // Lanes i + i + 2: in 128-bit lane q, elements 0-1 belong to v[q + 8m] and
  // 2-3 to v[q + 8m + 4].
  __m512 s2[2];
  for (int m = 0; m < 2; ++m) {
    s2[m] = _mm512_add_ps(_mm512_shuffle_ps(s4[2 * m], s4[2 * m + 1], 0x44),
                          _mm512_shuffle_ps(s4[2 * m], s4[2 * m + 1], 0xEE));
  }
  // Lanes i + i + 1: element 4q + r is v[q + 4r]; put it at q + 4r.
  const __m512 s1 =
      _mm512_add_ps(_mm512_shuffle_ps(s2[0], s2[1], 0x88), _mm512_shuffle_ps(s2[0], s2[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, s1);
}

// The policies of the three float storage types.
struct F32 {
  using Element = float;
  static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 LoadTail(__mmask16 m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
};

// Halves widen to floats exactly.
struct F16 {
  using Element = uint16_t;
  static __m512 Load(const uint16_t* h) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(h)));
  }
  static __m512 LoadTail(__mmask16 m, const uint16_t* h) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, h));
  }
};

// A bf16 is the top half of an f32, so widening is a 16-bit shift.
struct Bf16 {
  using Element = uint16_t;
  static __m512 Widen(__m256i halves) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
  }
  static __m512 Load(const uint16_t* b) {
    return Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  }
  static __m512 LoadTail(__mmask16 m, const uint16_t* b) {
    return Widen(_mm256_maskz_loadu_epi16(m, b));
  }
};

template <typename P>
float DotFloatRow(int64_t n, const void* k, const void* q) {
  const auto* a = static_cast<const typename P::Element*>(k);
  const auto* b = static_cast<const typename P::Element*>(q);
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(P::Load(a + i), P::Load(b + i), acc0);
    acc1 = _mm512_fmadd_ps(P::Load(a + i + 16), P::Load(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(P::Load(a + i), P::Load(b + i), acc0);
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    acc1 = _mm512_fmadd_ps(P::LoadTail(m, a + i), P::LoadTail(m, b + i), acc1);
  }
  return SumLanes(_mm512_add_ps(acc0, acc1));
}

template <typename P>
void AccumulateFloatRow(int64_t n, const void* v, float weight, float* out) {
  const auto* x = static_cast<const typename P::Element*>(v);
  const __m512 w = _mm512_set1_ps(weight);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, _mm512_fmadd_ps(P::Load(x + i), w, _mm512_loadu_ps(out + i)));
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    const __m512 sum = _mm512_fmadd_ps(P::LoadTail(m, x + i), w, _mm512_maskz_loadu_ps(m, out + i));
    _mm512_mask_storeu_ps(out + i, m, sum);
  }
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512
