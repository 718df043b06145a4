// The K-quant panel GEMMs with the AMX tile unit (q4_k_amx.cc, q5_k_amx.cc,
// q6_k_amx.cc), for tiles of 16 tokens; the rest of the tokens go to the
// type's AVX-512 kernel. Bit for bit the AVX-512 kernels' (and so the scalar
// reference's) results: only the exact integer sums are formed differently,
// and every float operation is the same, in the same order.
//
// Per super-block, row r and token t, the AVX-512 kernels form the integer
//   scaled = sum over sub-blocks j of scale_j(r) * sum over its elements
//            of level(r) * x(t)
// with a vpdpbusd per 4 elements, then the float steps. A tile multiply would
// need a separate int32 tile per sub-block to apply the scales after it.
// Instead each scale is split into digits, scale = sum of base^i * digit_i,
// small enough that level * digit_i is a byte. One tile product per digit
// over the whole super-block, C_i = x . (level * digit_i), gives
//   scaled = sum of base^i * C_i
// exactly (integer arithmetic). The weights are multiplied once per
// panel-block (Prepare) and reused by every token tile.
//
// A policy P gives a type's arithmetic:
//   kBlockBytes        bytes of a panel-block
//   kProducts          digits per scale (2 or 3)
//   kSignedWeights     whether level * digit is signed (tdpbssd) or not (tdpbsud)
//   Block              what the float steps need of a panel-block
//   Prepare(pb, w, b)  the weight operands of panel-block pb, and its Block
//   Steps(b, rows, t0, c, acc)
//                      acc[t0 + t] += the super-block's term for 16 tokens,
//                      from the products c[i][t][row]
//
// Same rules as avx512_util.h: include from the AMX kernel files only.
#pragma once

#include <algorithm>

#include "worker/kernels/cpu/amx_tile.h"
#include "worker/kernels/cpu/avx512_kquant.h"

namespace kvmesh::kernels::amx {

inline constexpr int kTileTokens = 16;

// A panel-block's weights as the tile operands of each of its four K steps
// of 64 elements, one set per digit: row k of a step holds elements 4k..4k+3
// of the step for all 16 weight rows (the layout of a panel's group vectors).
template <int kProducts>
struct alignas(64) WeightOperands {
  uint8_t b[kProducts][4][16][64];
};

template <int kProducts>
using Products = int32_t[kProducts][kTileTokens][16];

// Where a super-block's activations are: planar Q8_K rows of the tokens.
struct TokenRows {
  const uint8_t* x;  // first token's planar row
  size_t stride;
  const PlanarLayout* layout;
  int64_t sb;

  const uint8_t* Row(int64_t t) const { return x + t * stride; }
  float D(int64_t t) const { return avx512::LoadF32(Row(t) + layout->scales + 4 * sb); }
};

namespace kquant_detail {

// Tokens whose sums one pass over the weights keeps (8 KiB): each panel-block
// is prepared once per pass, so passes should be long.
constexpr int kGroupTokens = 128;

// Tile registers: products 0..2, activations 3, weights 4..6.
constexpr int kXTile = 3;

template <int kC, int kB, bool kSigned>
inline void Dot() {
  if constexpr (kSigned) {
    TileDotSignedSigned<kC, kXTile, kB>();
  } else {
    TileDotSignedUnsigned<kC, kXTile, kB>();
  }
}

// The products of 16 tokens' levels of one super-block (x: the first token's,
// rows `stride` apart) with the weight operands.
template <int kProducts, bool kSigned>
inline void MultiplyTile(const uint8_t* x, size_t stride, const WeightOperands<kProducts>& w,
                         Products<kProducts>& c) {
  TileZero<0>();
  TileZero<1>();
  if constexpr (kProducts == 3) TileZero<2>();
  for (int s = 0; s < 4; ++s) {
    TileLoad<kXTile>(x + 64 * s, stride);
    TileLoad<4>(w.b[0][s], 64);
    TileLoad<5>(w.b[1][s], 64);
    if constexpr (kProducts == 3) TileLoad<6>(w.b[2][s], 64);
    Dot<0, 4, kSigned>();
    Dot<1, 5, kSigned>();
    if constexpr (kProducts == 3) Dot<2, 6, kSigned>();
  }
  TileStore<0>(c[0], 64);
  TileStore<1>(c[1], 64);
  if constexpr (kProducts == 3) TileStore<2>(c[2], 64);
}

// Tokens [0, tokens) (a multiple of 16), at most kGroupTokens of them: their
// float sums stay in `acc` (contiguous, unlike y, whose rows lie a whole
// output row apart and fight over the same L1 sets) until a panel is done.
// (Queuing the next tokens' products before the float steps, in a second set
// of tiles, measured no faster: the two hardly overlap.)
template <typename P>
void AmxPanels(const P& policy, const PanelGemmArgs& a, int64_t tokens) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  const uint8_t* x_levels = a.x + layout.levels;
  WeightOperands<P::kProducts> w;
  typename P::Block block;
  alignas(64) Products<P::kProducts> c;
  alignas(64) float acc[kGroupTokens][16];
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const uint8_t* panel = a.panels + p * super_blocks * P::kBlockBytes;
    for (int64_t t = 0; t < tokens; ++t) _mm512_store_ps(acc[t], _mm512_setzero_ps());
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      policy.Prepare(panel + sb * P::kBlockBytes, &w, &block);
      const TokenRows rows{a.x, a.x_stride, &layout, sb};
      for (int64_t t0 = 0; t0 < tokens; t0 += kTileTokens) {
        MultiplyTile<P::kProducts, P::kSignedWeights>(x_levels + t0 * a.x_stride + 256 * sb,
                                                      a.x_stride, w, c);
        policy.Steps(block, rows, t0, c, acc);
      }
    }
    float* y = a.y + p * kPanelRows;
    for (int64_t t = 0; t < tokens; ++t) {
      _mm512_storeu_ps(y + t * a.y_stride, _mm512_load_ps(acc[t]));
    }
  }
}

}  // namespace kquant_detail

// The GEMM of policy P's type; `fallback` is its AVX-512 kernel.
template <typename P>
void KQuantGemm(const PanelGemmArgs& a, PanelGemmFn fallback) {
  const int64_t tiled = a.num_tokens / kTileTokens * kTileTokens;
  if (tiled > 0) {
    const P policy;
    const TileScope tiles;
    for (int64_t t0 = 0; t0 < tiled; t0 += kquant_detail::kGroupTokens) {
      PanelGemmArgs group = a;
      group.x = a.x + t0 * a.x_stride;
      group.y = a.y + t0 * a.y_stride;
      kquant_detail::AmxPanels(policy, group,
                               std::min<int64_t>(kquant_detail::kGroupTokens, tiled - t0));
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

// Q4_K and Q5_K: 6-bit unsigned scales as two 3-bit digits (base 8), levels
// below 32, so level * digit < 256 (tdpbsud). `Levels` gives the type:
//   kBlockBytes
//   Get(pb, c, g, level)  level[e] = group g of sub-block 2c + e (bytes 0..31)
template <typename Levels>
struct AffineK {
  static constexpr size_t kBlockBytes = Levels::kBlockBytes;
  static constexpr int kProducts = 2;
  static constexpr bool kSignedWeights = false;
  static constexpr int kScaleWords = 64;

  struct Block {
    __m512i mins[4];
    __m512 dw, dminw;
  };

  __m512i scale_words[4];  // byte k of each 32-bit lane into both its 16-bit words
  __m512i pick_min_pairs[2];

  AffineK() {
    for (int k = 0; k < 4; ++k) scale_words[k] = avx512::LaneBytePicker(k, k);
    pick_min_pairs[0] = avx512::LaneBytePicker(0, 1);
    pick_min_pairs[1] = avx512::LaneBytePicker(2, 3);
  }

  // A 16-bit multiply scales two levels at once: with a digit below 8 and
  // levels below 32, (256 * b + a) * s = 256 * (b * s) + a * s with
  // a * s < 256, so each byte of the product is its level times s.
  void Prepare(const uint8_t* pb, WeightOperands<2>* w, Block* b) const {
    const avx512::AffineKScaleBytes scale_bytes = avx512::LoadAffineKScaleBytes(pb + kScaleWords);
    const __m512i seven = _mm512_set1_epi16(7);
    for (int c = 0; c < 4; ++c) {  // K step c: sub-blocks 2c and 2c + 1
      __m512i digit[2][2];  // [e][i]: digit i of scale 2c + e in every 16-bit word of its row
      for (int e = 0; e < 2; ++e) {
        const int j = 2 * c + e;
        const __m512i s =
            _mm512_shuffle_epi8(j < 4 ? scale_bytes.lo : scale_bytes.hi, scale_words[j % 4]);
        digit[e][0] = _mm512_and_si512(s, seven);
        digit[e][1] = _mm512_srli_epi16(s, 3);
      }
      for (int g = 0; g < 8; ++g) {
        __m512i level[2];
        Levels::Get(pb, c, g, level);
        for (int e = 0; e < 2; ++e) {
          for (int i = 0; i < 2; ++i) {
            _mm512_store_si512(w->b[i][c][8 * e + g], _mm512_mullo_epi16(level[e], digit[e][i]));
          }
        }
      }
    }
    avx512::DecodeAffineKMins(pb + kScaleWords, pick_min_pairs, b->mins);
    b->dw = avx512::LoadHalves16(pb);
    b->dminw = avx512::LoadHalves16(pb + 32);
  }

  // acc += d * scaled - dmin * min_sum, as the AVX-512 kernels.
  void Steps(const Block& b, const TokenRows& rows, int64_t t0, const Products<2>& c,
             float (*acc)[16]) const {
    for (int t = 0; t < kTileTokens; ++t) {
      const uint8_t* row = rows.Row(t0 + t);
      const __m512i scaled = _mm512_add_epi32(_mm512_load_si512(c[0][t]),
                                              _mm512_slli_epi32(_mm512_load_si512(c[1][t]), 3));
      const uint8_t* bs = row + rows.layout->aux + 16 * rows.sb;  // 8 int16 bsum32
      __m512i min_sum = _mm512_setzero_si512();
      for (int m = 0; m < 4; ++m) {
        min_sum =
            _mm512_dpwssd_epi32(min_sum, b.mins[m], _mm512_set1_epi32(avx512::LoadI32(bs + 4 * m)));
      }
      const __m512 dx = _mm512_set1_ps(rows.D(t0 + t));
      const __m512 d = _mm512_mul_ps(b.dw, dx);
      const __m512 dmin = _mm512_mul_ps(b.dminw, dx);
      const __m512 term = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled)),
                                        _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min_sum)));
      float* sum = acc[t0 + t];
      _mm512_store_ps(sum, _mm512_add_ps(_mm512_load_ps(sum), term));
    }
  }
};

}  // namespace kvmesh::kernels::amx
