// Helpers shared by the AVX-512 K-quant files (q2_k … q6_k, iq4_xs _avx512.cc);
// same rules as avx512_util.h.
#pragma once

#include <cstring>

#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {

// Planar Q8_K rows of a token tile: one pointer per token, every field at a
// fixed offset from it. (A pointer per token and field - 4 x 8 of them - do
// not fit in the 16 general registers, and reloading them from the stack
// took a load per broadcast.)
template <int kTokens>
struct Q8KRows {
  const uint8_t* row[kTokens];
  size_t levels_at, d_at, bsum32_at, neg32_sum8_at, bsum16_at;

  Q8KRows(const uint8_t* x, size_t stride, const PlanarLayout& l, int64_t t0)
      : levels_at(l.levels),
        d_at(l.scales),
        bsum32_at(l.aux),
        neg32_sum8_at(l.aux2),
        bsum16_at(l.aux3) {
    for (int t = 0; t < kTokens; ++t) row[t] = x + (t0 + t) * stride;
  }
  const int8_t* levels(int t) const { return reinterpret_cast<const int8_t*>(row[t] + levels_at); }
  const float* d(int t) const { return reinterpret_cast<const float*>(row[t] + d_at); }
  const int16_t* bsum32(int t) const {
    return reinterpret_cast<const int16_t*>(row[t] + bsum32_at);
  }
  const int32_t* neg32_sum8(int t) const {
    return reinterpret_cast<const int32_t*>(row[t] + neg32_sum8_at);
  }
  const int16_t* bsum16(int t) const {
    return reinterpret_cast<const int16_t*>(row[t] + bsum16_at);
  }
};

// One panel's share of a K-type GEMM: its panel-blocks, the planar Q8_K
// activations and where its 16 outputs per token go. The tiles of the newer
// K types derive from it.
struct SuperBlockPanel {
  const uint8_t* panel;
  int64_t super_blocks;
  const uint8_t* x;
  size_t x_stride;
  PlanarLayout layout;
  float* y;
  int64_t y_stride;
};

// Runs Tile (a SuperBlockPanel followed by `extra`) over every panel of `a`,
// in token tiles (ForEachTokenTile).
template <typename Tile, typename... Extra>
inline void SuperBlockGemm(const PanelGemmArgs& a, size_t block_bytes, const Extra&... extra) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const Tile tile{{a.panels + p * super_blocks * static_cast<int64_t>(block_bytes), super_blocks,
                     a.x, a.x_stride, layout, a.y + p * kPanelRows, a.y_stride},
                    extra...};
    ForEachTokenTile(a.num_tokens, tile);
  }
}

// Byte-shuffle control that moves byte k of every 32-bit lane into that
// lane's low byte (and, with `second` >= 0, byte `second` into its third
// byte), zeroing the rest.
inline __m512i LaneBytePicker(int k, int second) {
  alignas(64) int8_t control[64];
  for (int i = 0; i < 64; ++i) {
    const int lane_base = i / 4 * 4 % 16;  // byte index of the lane in its 128-bit block
    const int pos = i % 4;
    int8_t v = static_cast<int8_t>(0x80);
    if (pos == 0) v = static_cast<int8_t>(lane_base + k);
    if (pos == 2 && second >= 0) v = static_cast<int8_t>(lane_base + second);
    control[i] = v;
  }
  return _mm512_load_si512(control);
}

// --- 4-bit codes looked up in a table (IQ4_XS, IQ3_S's expanded panels) -----

// Sub-block j of super-block sb, 32 four-bit codes per row in 4 vectors at
// `codes` (vector c: group c in the low nibbles, group c + 4 in the high),
// each looked up in `table` (its value + offset, unsigned): scaled[t] +=
// scale * (the exact sum of values times token t's 32 activation levels),
// the sum starting from -offset * bsum32 to take the offset back out.
template <int kTokens>
inline void AddNibbleTableSubBlock(const uint8_t* codes, __m512i table, int offset,
                                   const Q8KRows<kTokens>& rows, int64_t sb, int j, __m512i scale,
                                   __m512i scaled[kTokens]) {
  const __m512i nibble = _mm512_set1_epi8(0x0F);
  __m512i w[8];  // group c of the sub-block in w[c]
  for (int c = 0; c < 4; ++c) {
    const __m512i v = _mm512_loadu_si512(codes + 64 * c);
    w[c] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, nibble));
    w[c + 4] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble));
  }
  __m512i part[kTokens];
#pragma GCC unroll 16
  for (int t = 0; t < kTokens; ++t) {
    part[t] = _mm512_set1_epi32(-offset * rows.bsum32(t)[8 * sb + j]);
  }
#pragma GCC unroll 8
  for (int g = 0; g < 8; ++g) {
#pragma GCC unroll 16
    for (int t = 0; t < kTokens; ++t) {
      const int8_t* lv = rows.levels(t) + 256 * sb + 32 * j;
      part[t] = _mm512_dpbusd_epi32(part[t], w[g], Broadcast4(lv + 4 * g));
    }
  }
#pragma GCC unroll 16
  for (int t = 0; t < kTokens; ++t) {
    scaled[t] = _mm512_add_epi32(scaled[t], _mm512_mullo_epi32(part[t], scale));
  }
}

// --- grid types (IQ3_S, IQ3_XXS, IQ2_XS) ------------------------------------
//
// A group of 4 values of each row is a codebook point (iq_grids.h): the
// kernels gather the 16 rows' points as bytes, then give each byte its sign
// around an offset so vpdpbusd can take them unsigned.

// Byte-shuffle controls copying byte k of each 32-bit lane into all four of
// its bytes, k = 0..3.
struct LaneByteSpread {
  __m512i control[4];
  LaneByteSpread() {
    for (int k = 0; k < 4; ++k) {
      alignas(64) int8_t c[64];
      for (int i = 0; i < 64; ++i) c[i] = static_cast<int8_t>(i / 4 * 4 % 16 + k);
      control[k] = _mm512_load_si512(c);
    }
  }
};

// The bytes whose sign bit is set: `signs` holds, per lane, sign bits whose
// nibble `nibble` (0..7) belongs to this group of 4 (bit 4 * nibble + k for
// byte k).
inline __mmask64 GridSignMask(__m512i signs, const LaneByteSpread& spread, int nibble) {
  const __m512i bytes = _mm512_shuffle_epi8(signs, spread.control[nibble / 2]);
  const __m512i bits =
      _mm512_set1_epi32(nibble % 2 == 0 ? 0x08040201 : static_cast<int>(0x80402010u));
  return _mm512_test_epi8_mask(bytes, bits);
}

// offset + magnitude, or offset - magnitude where the sign is set: unsigned
// bytes for vpdpbusd (the sums then carry offset * the activations' sum).
inline __m512i OffsetSigned(__m512i magnitudes, __mmask64 negative, int offset) {
  const __m512i base = _mm512_set1_epi8(static_cast<char>(offset));
  return _mm512_mask_sub_epi8(_mm512_add_epi8(magnitudes, base), negative, base, magnitudes);
}

// The eight sign bits of each lane's 7-bit sign code (bits 0..6 of `codes`,
// the rest zero): the code and its parity as bit 7.
inline __m512i GridSigns8(__m512i codes) {
  __m512i p = _mm512_xor_si512(codes, _mm512_srli_epi32(codes, 4));
  p = _mm512_xor_si512(p, _mm512_srli_epi32(p, 2));
  p = _mm512_xor_si512(p, _mm512_srli_epi32(p, 1));
  return _mm512_or_si512(codes, _mm512_slli_epi32(_mm512_and_si512(p, _mm512_set1_epi32(1)), 7));
}

// Q4_K / Q5_K: the 6-bit scales and mins of 16 rows, from the three scale
// words of a panel-block. Byte 4r + k of `lo` / `hi` is row r's scale k /
// k + 4; a kernel picks sub-block j's scales when it reaches it
// (AffineKScale), so only these two registers stay live across the
// sub-blocks, and decodes the mins after them (DecodeAffineKMins).
struct AffineKScaleBytes {
  __m512i lo, hi;
};

inline AffineKScaleBytes LoadAffineKScaleBytes(const uint8_t* words) {
  const __m512i w0 = _mm512_loadu_si512(words);
  const __m512i w2 = _mm512_loadu_si512(words + 128);
  return {_mm512_and_si512(w0, _mm512_set1_epi8(0x3F)),
          _mm512_or_si512(_mm512_and_si512(w2, _mm512_set1_epi8(0x0F)),
                          _mm512_and_si512(_mm512_srli_epi32(w0, 2), _mm512_set1_epi8(0x30)))};
}

// Scale j of each row, in its lane (int32, for vpdpwssd / vpmulld).
inline __m512i AffineKScale(const AffineKScaleBytes& b, const __m512i pick[4], int j) {
  return _mm512_shuffle_epi8(j < 4 ? b.lo : b.hi, pick[j % 4]);
}

// mins[m] holds (min 2m, min 2m+1) of each row as an int16 pair.
inline void DecodeAffineKMins(const uint8_t* words, const __m512i pick_pairs[2], __m512i mins[4]) {
  const __m512i w1 = _mm512_loadu_si512(words + 64);
  const __m512i w2 = _mm512_loadu_si512(words + 128);
  const __m512i mn_lo = _mm512_and_si512(w1, _mm512_set1_epi8(0x3F));
  const __m512i mn_hi =
      _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi32(w2, 4), _mm512_set1_epi8(0x0F)),
                      _mm512_and_si512(_mm512_srli_epi32(w1, 2), _mm512_set1_epi8(0x30)));
  mins[0] = _mm512_shuffle_epi8(mn_lo, pick_pairs[0]);
  mins[1] = _mm512_shuffle_epi8(mn_lo, pick_pairs[1]);
  mins[2] = _mm512_shuffle_epi8(mn_hi, pick_pairs[0]);
  mins[3] = _mm512_shuffle_epi8(mn_hi, pick_pairs[1]);
}

// Q6_K panel-blocks: d[16] f16 | scales[16][16] int8 | 32 nibble vectors |
// 16 top-bit vectors (see panel_layout.h).
inline constexpr int kQ6KScales = 32;
inline constexpr int kQ6KLow = 288;
inline constexpr int kQ6KHigh = 288 + 32 * 64;

// Q6_K group vector G (elements 4G..4G+3 of each row) as unsigned 6-bit
// levels.
inline __m512i Q6KGroup(const uint8_t* pb, int group) {
  __m512i low = _mm512_loadu_si512(pb + kQ6KLow + 64 * (group % 32));
  if (group >= 32) low = _mm512_srli_epi16(low, 4);
  low = _mm512_and_si512(low, _mm512_set1_epi8(0x0F));
  __m512i high = _mm512_loadu_si512(pb + kQ6KHigh + 64 * (group % 16));
  switch (group / 16) {  // bring bits 2s, 2s+1 to bits 4, 5
    case 0:
      high = _mm512_slli_epi16(high, 4);
      break;
    case 1:
      high = _mm512_slli_epi16(high, 2);
      break;
    case 3:
      high = _mm512_srli_epi16(high, 2);
      break;
    default:
      break;
  }
  return _mm512_ternarylogic_epi32(low, high, _mm512_set1_epi8(0x30), 0xF8);  // low | (high & c)
}

// The Q4_K / Q5_K single-row dot product with Q8_K on this tier (see
// AffineKDotQ8_K): `levels(wb, j)` reads sub-block j's 32 unsigned levels.
template <size_t kBlockBytes, typename Levels>
float VecDotAffineKQ8_K(int64_t n, const void* w, const void* x, Levels levels) {
  return AffineKDotQ8_K<kBlockBytes>(n, w, x, [&](const uint8_t* wb, const uint8_t* xq, int j) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
    return ReduceAdd(_mm256_dpbusd_epi32(_mm256_setzero_si256(), levels(wb, j), q));
  });
}

}  // namespace kvmesh::kernels::avx512
