// Helpers shared by the AVX-512 float-type files (f32/f16/bf16_avx512*.cc);
// same rules as avx512_util.h.
//
// Float-type panel GEMM: one lane per row, and for each element k of K in
// order one multiply-add acc += w[k] * x[k] per (row, token). W is F32, F16
// or a BF16 pair; Policy::Accumulate applies one element (or pair).
#pragma once

#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {

// A policy P provides:
//   kStepBytes                 panel bytes per step
//   kStepElems                 elements per step (1, or 2 for BF16)
//   kXBytes                    planar bytes per step of one token
//   Load(panel_step)           per-step weight operand (any type W)
//   Accumulate(acc, w, xp)     acc for one token after this step, xp = the
//                              token's planar values of this step
//
// A tile is kPanels consecutive panels (16 rows each) x kTokens tokens. Two
// panels let each token's broadcast activation feed two multiply-adds instead
// of one, which halves the loads per multiply-add that bound the one-panel
// tile. Each row's sum is formed in the same order either way.
template <typename P, int kPanels = 1>
struct FloatTile {
  const uint8_t* panel;  // the first panel; the others follow it
  int64_t steps;
  const uint8_t* x;
  size_t x_stride;
  float* y;
  int64_t y_stride;

  template <int kTokens>
  void Run(int64_t t0) const {
    const uint8_t* xs[kTokens];
    for (int t = 0; t < kTokens; ++t) xs[t] = x + (t0 + t) * x_stride;
    __m512 acc[kPanels][kTokens];
    for (int r = 0; r < kPanels; ++r) {
      for (int t = 0; t < kTokens; ++t) acc[r][t] = _mm512_setzero_ps();
    }
    const size_t panel_bytes = static_cast<size_t>(steps) * P::kStepBytes;
    const uint8_t* p = panel;
    size_t offset = 0;
    for (int64_t k = 0; k < steps; ++k, p += P::kStepBytes, offset += P::kXBytes) {
      if (kTokens == 1 || t0 == 0) {
#pragma GCC unroll 2
        for (int r = 0; r < kPanels; ++r) PrefetchAhead(p + r * panel_bytes, P::kStepBytes);
      }
      decltype(P::Load(p)) w[kPanels];
#pragma GCC unroll 2
      for (int r = 0; r < kPanels; ++r) w[r] = P::Load(p + r * panel_bytes);
#pragma GCC unroll 16
      for (int t = 0; t < kTokens; ++t) {
#pragma GCC unroll 2
        for (int r = 0; r < kPanels; ++r) {
          acc[r][t] = P::Accumulate(acc[r][t], w[r], xs[t] + offset);
        }
      }
    }
    for (int t = 0; t < kTokens; ++t) {
      for (int r = 0; r < kPanels; ++r) {
        _mm512_storeu_ps(y + (t0 + t) * y_stride + r * kPanelRows, acc[r][t]);
      }
    }
  }
};

template <typename P>
inline void FloatGemm(const PanelGemmArgs& a) {
  const int64_t steps = (a.cols + P::kStepElems - 1) / P::kStepElems;
  const size_t panel_bytes = static_cast<size_t>(steps) * P::kStepBytes;
  int64_t p = 0;
  // Several tokens: pairs of panels (the last odd panel alone).
  if (a.num_tokens >= 4) {
    for (; p + 2 <= a.num_panels; p += 2) {
      const FloatTile<P, 2> tile{a.panels + p * panel_bytes, steps,     a.x, a.x_stride,
                                 a.y + p * kPanelRows,       a.y_stride};
      ForEachTokenTile<8>(a.num_tokens, tile);
    }
  }
  for (; p < a.num_panels; ++p) {
    const FloatTile<P> tile{a.panels + p * panel_bytes, steps,     a.x, a.x_stride,
                            a.y + p * kPanelRows,       a.y_stride};
    // 16 tokens: enough independent accumulators to hide the FMA latency.
    ForEachTokenTile<16>(a.num_tokens, tile);
  }
}

// Mask of the first `count` (0..16) lanes.
inline __mmask16 FirstLanes(int64_t count) {
  return static_cast<__mmask16>(count >= 16 ? 0xFFFF : (1u << count) - 1);
}

// Four 16-lane float accumulators over 64 elements per step, the rest into
// the first; lanes reduced in one fixed order. `load(i, mask)` returns
// elements i..i+15 (masked lanes zero) of w and x as a pair.
template <typename Load>
inline float DotFloatLanes(int64_t n, const Load& load) {
  __m512 acc[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    for (int a = 0; a < 4; ++a) {
      __m512 w, x;
      load(i + 16 * a, static_cast<__mmask16>(0xFFFF), &w, &x);
      acc[a] = _mm512_fmadd_ps(w, x, acc[a]);
    }
  }
  for (; i < n; i += 16) {
    __m512 w, x;
    load(i, FirstLanes(n - i), &w, &x);
    acc[0] = _mm512_fmadd_ps(w, x, acc[0]);
  }
  return _mm512_reduce_add_ps(
      _mm512_add_ps(_mm512_add_ps(acc[0], acc[1]), _mm512_add_ps(acc[2], acc[3])));
}

}  // namespace kvmesh::kernels::avx512
