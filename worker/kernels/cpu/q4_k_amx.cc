// Q4_K panel GEMM with the AMX tile unit, for tiles of 16 tokens; the rest of
// the tokens go to the AVX-512 kernel. Bit for bit the AVX-512 kernel's (and
// so the scalar reference's) results: only the exact integer sums are formed
// differently, and every float operation is the same, in the same order.
//
// Per super-block, row r and token t, the AVX-512 kernel forms
//   scaled = sum over sub-blocks j of scale_j(r) * sum over its 32 elements
//            of level(r) * x(t)
// with a vpdpbusd per 4 elements. A tile multiply would need a separate int32
// tile per sub-block to apply the 6-bit scales after it. Instead the scale is
// folded into the weights: scale = 8 * high + low with 3-bit halves, and
// level * low, level * high (at most 15 * 7) are bytes. So two tile products
// over the whole super-block,
//   C_low = x . (level * low),  C_high = x . (level * high),
// give scaled = C_low + 8 * C_high exactly (integer arithmetic). The weights
// are multiplied once per panel-block with a 128-entry product table
// (vpermt2b) and reused by every token tile.
#include <algorithm>

#include "worker/kernels/cpu/amx_tile.h"
#include "worker/kernels/cpu/avx512_kquant.h"
#include "worker/kernels/cpu/simd_kernels.h"

namespace kvmesh::kernels::amx {
namespace {

constexpr size_t kBlockBytes = 16 * 144;
constexpr int kScaleWords = 64;
constexpr int kNibbles = 256;
constexpr int kTileTokens = 16;
// Tokens whose sums one pass over the weights keeps (8 KiB): each panel-block
// is scaled once per pass (ScaleLevels), so passes should be long.
constexpr int kGroupTokens = 128;

// Tile registers.
constexpr int kCLow = 0, kCHigh = 1, kX = 2, kBLow = 3, kBHigh = 4, kCLow2 = 5, kCHigh2 = 6,
              kX2 = 7;

// One panel-block's weights as the two tile operands of each of its four
// K steps of 64 elements (sub-blocks 2c and 2c + 1): rows 0-7 hold sub-block
// 2c, rows 8-15 sub-block 2c + 1, each row 4 elements of all 16 weight rows.
struct alignas(64) ScaledLevels {
  uint8_t low[4][16][64];
  uint8_t high[4][16][64];
};

struct Constants {
  __m512i replicate[4];  // byte k of each 32-bit lane into all four
  __m512i products[2];   // byte 16 * s + l = s * l, s in 0..7, l in 0..15
  __m512i pick_min_pairs[2];

  Constants() {
    alignas(64) uint8_t control[64];
    for (int k = 0; k < 4; ++k) {
      for (int i = 0; i < 64; ++i) control[i] = static_cast<uint8_t>(i / 4 * 4 % 16 + k);
      replicate[k] = _mm512_load_si512(control);
    }
    alignas(64) uint8_t table[128];
    for (int i = 0; i < 128; ++i) table[i] = static_cast<uint8_t>(i / 16 * (i % 16));
    products[0] = _mm512_load_si512(table);
    products[1] = _mm512_load_si512(table + 64);
    pick_min_pairs[0] = avx512::LaneBytePicker(0, 1);
    pick_min_pairs[1] = avx512::LaneBytePicker(2, 3);
  }
};

__attribute__((target("avx512vbmi"))) void ScaleLevels(const uint8_t* pb, const Constants& k,
                                                       ScaledLevels* out) {
  const avx512::AffineKScaleBytes scale_bytes = avx512::LoadAffineKScaleBytes(pb + kScaleWords);
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  const __m512i seven = _mm512_set1_epi8(0x07);
  const __m512i top = _mm512_set1_epi8(0x70);
  for (int c = 0; c < 4; ++c) {
    // Index bits 4-6: scale_j % 8 (low) or scale_j / 8 (high), per lane.
    __m512i low_index[2], high_index[2];
    for (int e = 0; e < 2; ++e) {
      const int j = 2 * c + e;
      const __m512i s =
          _mm512_shuffle_epi8(j < 4 ? scale_bytes.lo : scale_bytes.hi, k.replicate[j % 4]);
      low_index[e] = _mm512_slli_epi16(_mm512_and_si512(s, seven), 4);
      high_index[e] = _mm512_and_si512(_mm512_slli_epi16(s, 1), top);  // s < 64: no carry
    }
    for (int g = 0; g < 8; ++g) {
      const __m512i v = _mm512_loadu_si512(pb + kNibbles + 64 * (8 * c + g));
      const __m512i level[2] = {_mm512_and_si512(v, nibble),
                                _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble)};
      for (int e = 0; e < 2; ++e) {
        _mm512_store_si512(
            out->low[c][8 * e + g],
            _mm512_permutex2var_epi8(k.products[0], _mm512_or_si512(level[e], low_index[e]),
                                     k.products[1]));
        _mm512_store_si512(
            out->high[c][8 * e + g],
            _mm512_permutex2var_epi8(k.products[0], _mm512_or_si512(level[e], high_index[e]),
                                     k.products[1]));
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
void AmxPanels(const PanelGemmArgs& a, int64_t tokens, const Constants& k) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  const uint8_t* x_levels = a.x + layout.levels;
  ScaledLevels w;
  alignas(64) int32_t c_low[2][kTileTokens][16];  // one per set of tiles
  alignas(64) int32_t c_high[2][kTileTokens][16];
  alignas(64) float acc[kGroupTokens][16];
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const uint8_t* panel = a.panels + p * super_blocks * kBlockBytes;
    for (int64_t t = 0; t < tokens; ++t) _mm512_store_ps(acc[t], _mm512_setzero_ps());
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      ScaleLevels(pb, k, &w);
      __m512i mins[4];
      avx512::DecodeAffineKMins(pb + kScaleWords, k.pick_min_pairs, mins);
      const __m512 dw = avx512::LoadHalves16(pb);
      const __m512 dminw = avx512::LoadHalves16(pb + 32);
      // Two sets of tiles: the products of the next 16 tokens are queued
      // before the float steps of the last 16 run, so the tile unit and the
      // vector units work at the same time. (Tile instructions execute in
      // order: a tile store queued after the next products would wait for
      // them.)
      const TokenSteps steps{a.x, a.x_stride, &layout, sb, mins, dw, dminw};
      IssueTile<kCLow, kCHigh, kX>(x_levels + 256 * sb, a.x_stride, w);
      for (int64_t t0 = 0; t0 < tokens; t0 += 2 * kTileTokens) {
        TileStore<kCLow>(c_low[0], 64);
        TileStore<kCHigh>(c_high[0], 64);
        const bool second = t0 + kTileTokens < tokens;
        if (second) {
          IssueTile<kCLow2, kCHigh2, kX2>(x_levels + (t0 + kTileTokens) * a.x_stride + 256 * sb,
                                          a.x_stride, w);
        }
        steps.Run(t0, c_low[0], c_high[0], acc);
        if (!second) break;
        TileStore<kCLow2>(c_low[1], 64);
        TileStore<kCHigh2>(c_high[1], 64);
        if (t0 + 2 * kTileTokens < tokens) {
          IssueTile<kCLow, kCHigh, kX>(x_levels + (t0 + 2 * kTileTokens) * a.x_stride + 256 * sb,
                                       a.x_stride, w);
        }
        steps.Run(t0 + kTileTokens, c_low[1], c_high[1], acc);
      }
    }
    float* y = a.y + p * kPanelRows;
    for (int64_t t = 0; t < tokens; ++t)
      _mm512_storeu_ps(y + t * a.y_stride, _mm512_load_ps(acc[t]));
  }
}

}  // namespace

void GemmQ4_K(const PanelGemmArgs& a) {
  const int64_t tiled = a.num_tokens / kTileTokens * kTileTokens;
  if (tiled > 0) {
    const Constants k;
    const TileScope tiles;
    for (int64_t t0 = 0; t0 < tiled; t0 += kGroupTokens) {
      PanelGemmArgs group = a;
      group.x = a.x + t0 * a.x_stride;
      group.y = a.y + t0 * a.y_stride;
      AmxPanels(group, std::min<int64_t>(kGroupTokens, tiled - t0), k);
    }
  }
  if (tiled < a.num_tokens) {
    PanelGemmArgs rest = a;
    rest.x = a.x + tiled * a.x_stride;
    rest.y = a.y + tiled * a.y_stride;
    rest.num_tokens = a.num_tokens - tiled;
    avx512::GemmQ4_K(rest);
  }
}

}  // namespace kvmesh::kernels::amx
