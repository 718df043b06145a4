// The Q4_K / Q5_K panel GEMM with the AMX tile unit (q4_k_amx.cc,
// q5_k_amx.cc), for tiles of 16 tokens; the rest of the tokens go to the
// type's AVX-512 kernel. Bit for bit the AVX-512 kernels' (and so the scalar
// reference's) results: only the exact integer sums are formed differently,
// and every float operation is the same, in the same order.
//
// Per super-block, row r and token t, the AVX-512 kernels form
//   scaled = sum over sub-blocks j of scale_j(r) * sum over its 32 elements
//            of level(r) * x(t)
// with a vpdpbusd per 4 elements. A tile multiply would need a separate int32
// tile per sub-block to apply the 6-bit scales after it. Instead the scale is
// folded into the weights: scale = 8 * high + low with 3-bit halves, and
// level * low, level * high (at most 31 * 7) are bytes. So two tile products
// over the whole super-block,
//   C_low = x . (level * low),  C_high = x . (level * high),
// give scaled = C_low + 8 * C_high exactly (integer arithmetic). The weights
// are multiplied once per panel-block (ScaleLevels) and reused by every token
// tile.
//
// A Levels policy gives a type's panel-block size and its levels:
//   kBlockBytes
//   Get(pb, c, g, level)  level[e] = group g of sub-block 2c + e (bytes 0..31)
//
// Same rules as avx512_util.h: include from the AMX kernel files only.
#pragma once

#include <algorithm>

#include "worker/kernels/cpu/amx_tile.h"
#include "worker/kernels/cpu/avx512_kquant.h"

namespace kvmesh::kernels::amx {
namespace affine_k_detail {

constexpr int kScaleWords = 64;
constexpr int kTileTokens = 16;
// Tokens whose sums one pass over the weights keeps (8 KiB): each panel-block
// is scaled once per pass (ScaleLevels), so passes should be long.
constexpr int kGroupTokens = 128;

// Tile registers.
constexpr int kCLow = 0, kCHigh = 1, kX = 2, kBLow = 3, kBHigh = 4;

// One panel-block's weights as the two tile operands of each of its four
// K steps of 64 elements (sub-blocks 2c and 2c + 1): rows 0-7 hold sub-block
// 2c, rows 8-15 sub-block 2c + 1, each row 4 elements of all 16 weight rows.
struct alignas(64) ScaledLevels {
  uint8_t low[4][16][64];
  uint8_t high[4][16][64];
};

struct Constants {
  __m512i scale_words[4];  // byte k of each 32-bit lane into both its 16-bit words
  __m512i pick_min_pairs[2];

  Constants() {
    for (int k = 0; k < 4; ++k) scale_words[k] = avx512::LaneBytePicker(k, k);
    pick_min_pairs[0] = avx512::LaneBytePicker(0, 1);
    pick_min_pairs[1] = avx512::LaneBytePicker(2, 3);
  }
};

// A 16-bit multiply scales two levels at once: with s < 8 and levels < 32,
// (256 * b + a) * s = 256 * (b * s) + a * s with a * s < 256, so each byte
// of the product is its level times s.
template <typename Levels>
void ScaleLevels(const uint8_t* pb, const Constants& k, ScaledLevels* out) {
  const avx512::AffineKScaleBytes scale_bytes = avx512::LoadAffineKScaleBytes(pb + kScaleWords);
  const __m512i seven = _mm512_set1_epi16(7);
  for (int c = 0; c < 4; ++c) {
    __m512i low[2], high[2];  // scale_j % 8 and scale_j / 8 in every 16-bit word of row r's lane
    for (int e = 0; e < 2; ++e) {
      const int j = 2 * c + e;
      const __m512i s =
          _mm512_shuffle_epi8(j < 4 ? scale_bytes.lo : scale_bytes.hi, k.scale_words[j % 4]);
      low[e] = _mm512_and_si512(s, seven);
      high[e] = _mm512_srli_epi16(s, 3);
    }
    for (int g = 0; g < 8; ++g) {
      __m512i level[2];
      Levels::Get(pb, c, g, level);
      for (int e = 0; e < 2; ++e) {
        _mm512_store_si512(out->low[c][8 * e + g], _mm512_mullo_epi16(level[e], low[e]));
        _mm512_store_si512(out->high[c][8 * e + g], _mm512_mullo_epi16(level[e], high[e]));
      }
    }
  }
}

// Zeroes tiles kLow / kHigh and adds the products of 16 tokens' levels of one
// super-block (x: the first token's, rows `stride` apart) with its scaled
// weights.
template <int kLow, int kHigh, int kXT>
inline void IssueTile(const uint8_t* x, size_t stride, const ScaledLevels& w) {
  TileZero<kLow>();
  TileZero<kHigh>();
  for (int c = 0; c < 4; ++c) {
    TileLoad<kXT>(x + 64 * c, stride);
    TileLoad<kBLow>(w.low[c], 64);
    TileLoad<kBHigh>(w.high[c], 64);
    TileDotSignedUnsigned<kLow, kXT, kBLow>();
    TileDotSignedUnsigned<kHigh, kXT, kBHigh>();
  }
}

// The AVX-512 kernel's float steps of one super-block for 16 tokens, from the
// two products: acc[t] += d * scaled - dmin * min_sum.
struct TokenSteps {
  const uint8_t* x;
  size_t x_stride;
  const PlanarLayout* layout;
  int64_t sb;
  const __m512i* mins;
  __m512 dw, dminw;

  void Run(int64_t t0, const int32_t (*c_low)[16], const int32_t (*c_high)[16],
           float (*acc)[16]) const {
    for (int t = 0; t < kTileTokens; ++t) {
      const uint8_t* row = x + (t0 + t) * x_stride;
      const __m512i scaled = _mm512_add_epi32(_mm512_load_si512(c_low[t]),
                                              _mm512_slli_epi32(_mm512_load_si512(c_high[t]), 3));
      const uint8_t* bs = row + layout->aux + 16 * sb;  // this super-block's 8 int16 bsum32
      __m512i min_sum = _mm512_setzero_si512();
      for (int m = 0; m < 4; ++m) {
        min_sum =
            _mm512_dpwssd_epi32(min_sum, mins[m], _mm512_set1_epi32(avx512::LoadI32(bs + 4 * m)));
      }
      const __m512 dx = _mm512_set1_ps(avx512::LoadF32(row + layout->scales + 4 * sb));
      const __m512 d = _mm512_mul_ps(dw, dx);
      const __m512 dmin = _mm512_mul_ps(dminw, dx);
      const __m512 term = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled)),
                                        _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min_sum)));
      float* sum = acc[t0 + t];
      _mm512_store_ps(sum, _mm512_add_ps(_mm512_load_ps(sum), term));
    }
  }
};

// Tokens [0, tokens) (a multiple of 16), at most kGroupTokens of them: their
// float sums stay in `acc` (contiguous, unlike y, whose rows lie a whole
// output row apart and fight over the same L1 sets) until a panel is done.
template <typename Levels>
void AmxPanels(const PanelGemmArgs& a, int64_t tokens, const Constants& k) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  const uint8_t* x_levels = a.x + layout.levels;
  ScaledLevels w;
  alignas(64) int32_t c_low[kTileTokens][16];
  alignas(64) int32_t c_high[kTileTokens][16];
  alignas(64) float acc[kGroupTokens][16];
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const uint8_t* panel = a.panels + p * super_blocks * Levels::kBlockBytes;
    for (int64_t t = 0; t < tokens; ++t) _mm512_store_ps(acc[t], _mm512_setzero_ps());
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * Levels::kBlockBytes;
      ScaleLevels<Levels>(pb, k, &w);
      __m512i mins[4];
      avx512::DecodeAffineKMins(pb + kScaleWords, k.pick_min_pairs, mins);
      const __m512 dw = avx512::LoadHalves16(pb);
      const __m512 dminw = avx512::LoadHalves16(pb + 32);
      // (Queuing the next tokens' products before these float steps, in a
      // second set of tiles, measured no faster: the two hardly overlap.)
      const TokenSteps steps{a.x, a.x_stride, &layout, sb, mins, dw, dminw};
      for (int64_t t0 = 0; t0 < tokens; t0 += kTileTokens) {
        IssueTile<kCLow, kCHigh, kX>(x_levels + t0 * a.x_stride + 256 * sb, a.x_stride, w);
        TileStore<kCLow>(c_low, 64);
        TileStore<kCHigh>(c_high, 64);
        steps.Run(t0, c_low, c_high, acc);
      }
    }
    float* y = a.y + p * kPanelRows;
    for (int64_t t = 0; t < tokens; ++t)
      _mm512_storeu_ps(y + t * a.y_stride, _mm512_load_ps(acc[t]));
  }
}

}  // namespace affine_k_detail

// The GEMM for the type of `Levels`; `fallback` is its AVX-512 kernel.
template <typename Levels>
void AffineKGemm(const PanelGemmArgs& a, PanelGemmFn fallback) {
  using namespace affine_k_detail;
  const int64_t tiled = a.num_tokens / kTileTokens * kTileTokens;
  if (tiled > 0) {
    const Constants k;
    const TileScope tiles;
    for (int64_t t0 = 0; t0 < tiled; t0 += kGroupTokens) {
      PanelGemmArgs group = a;
      group.x = a.x + t0 * a.x_stride;
      group.y = a.y + t0 * a.y_stride;
      AmxPanels<Levels>(group, std::min<int64_t>(kGroupTokens, tiled - t0), k);
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
