// Helpers shared by the AVX2 K-quant files (q2_k … q6_k, iq4_xs _avx2.cc); same
// rules as avx2_util.h.
#pragma once

#include <cstring>

#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {

template <int kTokens>
struct Q8KRows {
  const int8_t* levels[kTokens];
  const float* d[kTokens];
  const int16_t* bsum32[kTokens];
  const int16_t* bsum16[kTokens];

  Q8KRows(const uint8_t* x, size_t stride, const PlanarLayout& l, int64_t t0) {
    for (int t = 0; t < kTokens; ++t) {
      const uint8_t* row = x + (t0 + t) * stride;
      levels[t] = reinterpret_cast<const int8_t*>(row + l.levels);
      d[t] = reinterpret_cast<const float*>(row + l.scales);
      bsum32[t] = reinterpret_cast<const int16_t*>(row + l.aux);
      bsum16[t] = reinterpret_cast<const int16_t*>(row + l.aux3);
    }
  }
};

// One panel's share of a K-type GEMM (as avx512_kquant.h's); the tiles of the
// newer K types derive from it.
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
// per half and token tile (ForEachHalfAndTokenTile).
template <typename Tile, typename... Extra>
inline void SuperBlockGemm(const PanelGemmArgs& a, size_t block_bytes, const Extra&... extra) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const Tile tile{{a.panels + p * super_blocks * static_cast<int64_t>(block_bytes), super_blocks,
                     a.x, a.x_stride, layout, a.y + p * kPanelRows, a.y_stride},
                    extra...};
    ForEachHalfAndTokenTile(a.num_tokens, tile);
  }
}

// Byte-shuffle control putting byte `first` of each 32-bit lane in bytes 0
// and (if `second` >= 0) byte `second` in byte 2, zero elsewhere; or with
// `both` set, byte `first` in bytes 0 and 2 (an int16 pair (s, s)).
inline __m256i LaneBytePicker(int first, int second) {
  alignas(32) int8_t control[32];
  for (int i = 0; i < 32; ++i) {
    const int lane_base = i / 4 * 4 % 16;
    const int pos = i % 4;
    int8_t v = static_cast<int8_t>(0x80);
    if (pos == 0) v = static_cast<int8_t>(lane_base + first);
    if (pos == 2 && second >= 0) v = static_cast<int8_t>(lane_base + second);
    control[i] = v;
  }
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(control));
}

// --- grid types (IQ3_S, IQ3_XXS, IQ2_XS), as avx512_kquant.h's -------------

// Byte-shuffle controls copying byte k of each 32-bit lane into all four of
// its bytes, k = 0..3.
struct LaneByteSpread {
  __m256i control[4];
  LaneByteSpread() {
    for (int k = 0; k < 4; ++k) {
      alignas(32) int8_t c[32];
      for (int i = 0; i < 32; ++i) c[i] = static_cast<int8_t>(i / 4 * 4 % 16 + k);
      control[k] = _mm256_load_si256(reinterpret_cast<const __m256i*>(c));
    }
  }
};

// 0xFF in the bytes whose sign bit is set (bit 4 * nibble + k of the lane
// for byte k), 0 elsewhere.
inline __m256i GridNegativeBytes(__m256i signs, const LaneByteSpread& spread, int nibble) {
  const __m256i bytes = _mm256_shuffle_epi8(signs, spread.control[nibble / 2]);
  const __m256i bits =
      _mm256_set1_epi32(nibble % 2 == 0 ? 0x08040201 : static_cast<int>(0x80402010u));
  return _mm256_cmpeq_epi8(_mm256_and_si256(bytes, bits), bits);
}

// offset + magnitude, or offset - magnitude where `negative`: unsigned bytes
// for vpmaddubsw.
inline __m256i OffsetSigned(__m256i magnitudes, __m256i negative, int offset) {
  const __m256i base = _mm256_set1_epi8(static_cast<char>(offset));
  return _mm256_blendv_epi8(_mm256_add_epi8(base, magnitudes), _mm256_sub_epi8(base, magnitudes),
                            negative);
}

// The eight sign bits of each lane's 7-bit sign code: the code and its
// parity as bit 7.
inline __m256i GridSigns8(__m256i codes) {
  __m256i p = _mm256_xor_si256(codes, _mm256_srli_epi32(codes, 4));
  p = _mm256_xor_si256(p, _mm256_srli_epi32(p, 2));
  p = _mm256_xor_si256(p, _mm256_srli_epi32(p, 1));
  return _mm256_or_si256(codes, _mm256_slli_epi32(_mm256_and_si256(p, _mm256_set1_epi32(1)), 7));
}

struct KPickers {
  __m256i scale_pair[4];  // (scale k, scale k) as int16 pair
  __m256i min_pairs[2];   // (min 0, min 1) and (min 2, min 3)
  KPickers() {
    for (int k = 0; k < 4; ++k) scale_pair[k] = LaneBytePicker(k, k);
    min_pairs[0] = LaneBytePicker(0, 1);
    min_pairs[1] = LaneBytePicker(2, 3);
  }
};

// Q4_K / Q5_K scales and mins of 8 rows (one half): scales[j] = (scale j,
// scale j) int16 pairs, mins[m] = (min 2m, min 2m+1) int16 pairs.
struct AffineKScales {
  __m256i scales[8];
  __m256i mins[4];
};

inline void DecodeAffineKScales(const uint8_t* words, int half, const KPickers& pick,
                                AffineKScales* out) {
  const __m256i w0 = Load256(words + 32 * half);
  const __m256i w1 = Load256(words + 64 + 32 * half);
  const __m256i w2 = Load256(words + 128 + 32 * half);
  const __m256i m6 = _mm256_set1_epi8(0x3F);
  const __m256i m4 = _mm256_set1_epi8(0x0F);
  const __m256i top = _mm256_set1_epi8(0x30);
  const __m256i sc_lo = _mm256_and_si256(w0, m6);
  const __m256i mn_lo = _mm256_and_si256(w1, m6);
  const __m256i sc_hi =
      _mm256_or_si256(_mm256_and_si256(w2, m4), _mm256_and_si256(_mm256_srli_epi32(w0, 2), top));
  const __m256i mn_hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(w2, 4), m4),
                                        _mm256_and_si256(_mm256_srli_epi32(w1, 2), top));
  for (int k = 0; k < 4; ++k) {
    out->scales[k] = _mm256_shuffle_epi8(sc_lo, pick.scale_pair[k]);
    out->scales[k + 4] = _mm256_shuffle_epi8(sc_hi, pick.scale_pair[k]);
  }
  out->mins[0] = _mm256_shuffle_epi8(mn_lo, pick.min_pairs[0]);
  out->mins[1] = _mm256_shuffle_epi8(mn_lo, pick.min_pairs[1]);
  out->mins[2] = _mm256_shuffle_epi8(mn_hi, pick.min_pairs[0]);
  out->mins[3] = _mm256_shuffle_epi8(mn_hi, pick.min_pairs[1]);
}

// The shared tail of Q4_K / Q5_K per super-block and token: mins and the
// reference's float steps.
inline __m256 AffineKTerm(__m256i scaled, const AffineKScales& sm, const int16_t* bsum32, __m256 dw,
                          __m256 dminw, float dx_value) {
  __m256i min_sum = _mm256_madd_epi16(sm.mins[0], _mm256_set1_epi32(LoadI32(bsum32)));
  for (int m = 1; m < 4; ++m) {
    min_sum = _mm256_add_epi32(
        min_sum, _mm256_madd_epi16(sm.mins[m], _mm256_set1_epi32(LoadI32(bsum32 + 2 * m))));
  }
  const __m256 dx = _mm256_set1_ps(dx_value);
  const __m256 d = _mm256_mul_ps(dw, dx);
  const __m256 dmin = _mm256_mul_ps(dminw, dx);
  return _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(scaled)),
                       _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(min_sum)));
}

// The Q4_K / Q5_K single-row dot product with Q8_K on this tier (see
// AffineKDotQ8_K): `levels(wb, j)` reads sub-block j's 32 unsigned levels.
template <size_t kBlockBytes, typename Levels>
float VecDotAffineKQ8_K(int64_t n, const void* w, const void* x, Levels levels) {
  return AffineKDotQ8_K<kBlockBytes>(n, w, x, [&](const uint8_t* wb, const uint8_t* xq, int j) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq));
    return ReduceAdd(PairSums(_mm256_maddubs_epi16(levels(wb, j), q)));
  });
}

}  // namespace kvmesh::kernels::avx2
