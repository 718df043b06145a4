// Helpers shared by the AVX2 float-type files (f32/f16/bf16_avx2.cc); same
// rules as avx2_util.h. The GEMM is that of avx512_float.h on 8-lane halves.
#pragma once

#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {

// Policy P: kStepBytes (panel bytes per step, both halves), kStepElems,
// kXBytes, Load(panel_step, half), Accumulate(acc, w, xp).
template <typename P>
struct FloatTile {
  const uint8_t* panel;
  int64_t steps;
  const uint8_t* x;
  size_t x_stride;
  float* y;
  int64_t y_stride;

  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const uint8_t* xs[kTokens];
    for (int t = 0; t < kTokens; ++t) xs[t] = x + (t0 + t) * x_stride;
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t k = 0; k < steps; ++k) {
      if ((kTokens == 1 || t0 == 0) && half == 0)
        PrefetchAhead(panel + k * P::kStepBytes, P::kStepBytes);
      const auto w = P::Load(panel + k * P::kStepBytes, half);
      for (int t = 0; t < kTokens; ++t) acc[t] = P::Accumulate(acc[t], w, xs[t] + k * P::kXBytes);
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

template <typename P>
inline void FloatGemm(const PanelGemmArgs& a) {
  const int64_t steps = (a.cols + P::kStepElems - 1) / P::kStepElems;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const FloatTile<P> tile{a.panels + p * steps * P::kStepBytes,
                            steps,
                            a.x,
                            a.x_stride,
                            a.y + p * kPanelRows,
                            a.y_stride};
    ForEachHalfAndTokenTile(a.num_tokens, tile);
  }
}

// Four 8-lane accumulators over 32 elements per step, the rest into the
// first; `load(i, count, &w, &x)` gives elements i..i+count-1 (count <= 8,
// the remaining lanes zero).
template <typename Load>
inline float DotFloatLanes(int64_t n, const Load& load) {
  __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                   _mm256_setzero_ps()};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int a = 0; a < 4; ++a) {
      __m256 w, x;
      load(i + 8 * a, 8, &w, &x);
      acc[a] = _mm256_fmadd_ps(w, x, acc[a]);
    }
  }
  for (; i < n; i += 8) {
    __m256 w, x;
    load(i, n - i < 8 ? static_cast<int>(n - i) : 8, &w, &x);
    acc[0] = _mm256_fmadd_ps(w, x, acc[0]);
  }
  return ReduceAdd(_mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3])));
}

// Copies `count` (< 8) elements of `size` bytes into a zeroed 32-byte buffer.
inline void CopyTail(const void* src, int count, size_t size, uint8_t* buffer) {
  std::memset(buffer, 0, 32);
  std::memcpy(buffer, src, static_cast<size_t>(count) * size);
}

}  // namespace kvmesh::kernels::avx2
