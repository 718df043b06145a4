// The driver of the panel GEMMs with the AMX tile unit (*_amx.cc): tiles of 16
// tokens, the rest of the tokens (and any K that is not a whole number of
// units) go to the type's AVX-512 kernel. Each kernel gives the AVX-512
// kernel's (and so the scalar reference's) results bit for bit: only exact
// integer sums are formed differently, and every float operation is the
// same, in the same order.
//
// A policy P gives a type's arithmetic over "units" of K:
//   kActivationType     the planar activation type (Q8_K, Q8_0)
//   kUnitElements       elements of a unit; kUnitBytes: bytes of a panel-unit
//   kTileShapes         the tile configuration
//   Operands, Block, Products
//                       the tile operands of a panel-unit's weights, what the
//                       float steps need of it, and the tile products of 16
//                       tokens
//   Prepare(pu, w, b)   Operands and Block of panel-unit pu
//   Multiply(x, stride, w, c)
//                       the products of 16 tokens (levels of the unit at x,
//                       rows `stride` apart)
//   Steps(b, rows, t0, c, acc)
//                       acc[t0 + t] += the unit's terms for 16 tokens (the
//                       sums before unit 0 come from LoadSums)
//
// Same rules as avx512_util.h: include from the AMX kernel files only.
#pragma once

#include <algorithm>

#include "worker/kernels/cpu/simd/amx_tile.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::amx {

inline constexpr int kTileTokens = 16;

// Where a unit's activations are: planar rows of the tokens.
struct TokenRows {
  const uint8_t* x;  // first token's planar row
  size_t stride;
  const PlanarLayout* layout;
  int64_t unit;

  const uint8_t* Row(int64_t t) const { return x + t * stride; }
  // The activation scale of block `block` (counted over the whole row).
  float D(int64_t t, int64_t block) const {
    return avx512::LoadF32(Row(t) + layout->scales + 4 * block);
  }
};

// A token's float sums before a unit's terms: zero before the first unit.
// (The AVX-512 kernels add the first terms to zero too, which matters for a
// term of -0.)
inline __m512 LoadSums(const float* acc, int64_t unit) {
  return unit == 0 ? _mm512_setzero_ps() : _mm512_load_ps(acc);
}

namespace gemm_detail {

// Tokens whose sums one pass over the weights keeps (8 KiB): each panel-unit
// is prepared once per pass, so passes should be long.
constexpr int kGroupTokens = 128;

// Tokens [0, tokens) (a multiple of 16), at most kGroupTokens of them: their
// float sums stay in `acc` (contiguous, unlike y, whose rows lie a whole
// output row apart and fight over the same L1 sets) until a panel is done.
// (Queuing the next tokens' products before the float steps, in a second set
// of tiles, measured no faster: the two hardly overlap.)
template <typename P>
void AmxPanels(const P& policy, const PanelGemmArgs& a, int64_t tokens) {
  const PlanarLayout layout = GetPlanarLayout(P::kActivationType, a.cols);
  const int64_t units = a.cols / P::kUnitElements;
  const uint8_t* x_levels = a.x + layout.levels;
  typename P::Operands w;
  typename P::Block block;
  alignas(64) typename P::Products c;
  alignas(64) float acc[kGroupTokens][16];
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const uint8_t* panel = a.panels + p * units * P::kUnitBytes;
    for (int64_t u = 0; u < units; ++u) {
      // The weights may come from memory (a decode step of 16 or more
      // sequences): ask for them ahead, as the AVX-512 kernels do.
      avx512::PrefetchAhead(panel + u * P::kUnitBytes, P::kUnitBytes);
      policy.Prepare(panel + u * P::kUnitBytes, &w, &block);
      const TokenRows rows{a.x, a.x_stride, &layout, u};
      for (int64_t t0 = 0; t0 < tokens; t0 += kTileTokens) {
        P::Multiply(x_levels + t0 * a.x_stride + u * P::kUnitElements, a.x_stride, w, c);
        policy.Steps(block, rows, t0, c, acc);
      }
    }
    float* y = a.y + p * kPanelRows;
    for (int64_t t = 0; t < tokens; ++t) {
      _mm512_storeu_ps(y + t * a.y_stride, _mm512_load_ps(acc[t]));
    }
  }
}

}  // namespace gemm_detail

// The GEMM of policy P's type; `fallback` is its AVX-512 kernel.
template <typename P>
void AmxGemm(const PanelGemmArgs& a, PanelGemmFn fallback) {
  const int64_t tiled =
      a.cols % P::kUnitElements == 0 ? a.num_tokens / kTileTokens * kTileTokens : 0;
  if (tiled > 0) {
    const P policy;
    const TileScope tiles(P::kTileShapes);
    for (int64_t t0 = 0; t0 < tiled; t0 += gemm_detail::kGroupTokens) {
      PanelGemmArgs group = a;
      group.x = a.x + t0 * a.x_stride;
      group.y = a.y + t0 * a.y_stride;
      gemm_detail::AmxPanels(policy, group,
                             std::min<int64_t>(gemm_detail::kGroupTokens, tiled - t0));
    }
  }
  if (tiled < a.num_tokens) {
    PanelGemmArgs rest = a;
    rest.x = a.x + tiled * a.x_stride;
    rest.y = a.y + tiled * a.y_stride;
    rest.num_tokens = a.num_tokens - tiled;
    fallback(rest);
  }
}

}  // namespace kvmesh::kernels::amx
