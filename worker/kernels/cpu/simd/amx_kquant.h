// The K-quant policies of the AMX GEMM (amx_gemm.h): q4_k_amx.cc,
// q5_k_amx.cc, q6_k_amx.cc. A unit is a super-block of 256.
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
// KQuantPolicy<kProducts, kSigned> holds what the K-quant policies share: a
// policy adds kUnitBytes, Block, Prepare and Steps.
#pragma once

#include "worker/kernels/cpu/simd/amx_gemm.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::amx {

// A panel-block's weights as the tile operands of each of its four K steps
// of 64 elements, one set per digit: row k of a step holds elements 4k..4k+3
// of the step for all 16 weight rows (the layout of a panel's group vectors).
template <int kProducts>
struct alignas(64) WeightOperands {
  uint8_t b[kProducts][4][16][64];
};

template <int kProducts>
using Products = int32_t[kProducts][kTileTokens][16];

namespace kquant_detail {

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

}  // namespace kquant_detail

template <int kProducts_, bool kSigned>
struct KQuantPolicy {
  static constexpr TensorType kActivationType = TensorType::kQ8_K;
  static constexpr int64_t kUnitElements = 256;
  static constexpr TileShapes kTileShapes = kFullTiles;
  static constexpr int kProducts = kProducts_;
  using Operands = WeightOperands<kProducts>;
  using Products = amx::Products<kProducts>;

  static void Multiply(const uint8_t* x, size_t stride, const Operands& w, Products& c) {
    kquant_detail::MultiplyTile<kProducts, kSigned>(x, stride, w, c);
  }
};

// Q4_K and Q5_K: 6-bit unsigned scales as two 3-bit digits (base 8), levels
// below 32, so level * digit < 256 (tdpbsud). `Levels` gives the type:
//   kBlockBytes
//   Get(pb, c, g, level)  level[e] = group g of sub-block 2c + e (bytes 0..31)
template <typename Levels>
struct AffineK : KQuantPolicy<2, false> {
  static constexpr size_t kUnitBytes = Levels::kBlockBytes;
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
  void Steps(const Block& b, const TokenRows& rows, int64_t t0, const Products& c,
             float (*acc)[16]) const {
    for (int t = 0; t < kTileTokens; ++t) {
      const uint8_t* row = rows.Row(t0 + t);
      const __m512i scaled = _mm512_add_epi32(_mm512_load_si512(c[0][t]),
                                              _mm512_slli_epi32(_mm512_load_si512(c[1][t]), 3));
      const uint8_t* bs = row + rows.layout->aux + 16 * rows.unit;  // 8 int16 bsum32
      __m512i min_sum = _mm512_setzero_si512();
      for (int m = 0; m < 4; ++m) {
        min_sum =
            _mm512_dpwssd_epi32(min_sum, b.mins[m], _mm512_set1_epi32(avx512::LoadI32(bs + 4 * m)));
      }
      const __m512 dx = _mm512_set1_ps(rows.D(t0 + t, rows.unit));
      const __m512 d = _mm512_mul_ps(b.dw, dx);
      const __m512 dmin = _mm512_mul_ps(b.dminw, dx);
      const __m512 term = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled)),
                                        _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min_sum)));
      float* sum = acc[t0 + t];
      _mm512_store_ps(sum, _mm512_add_ps(LoadSums(sum, rows.unit), term));
    }
  }
};

}  // namespace kvmesh::kernels::amx
