// Helpers shared by the AVX2 kernel files (*_avx2.cc), which are all compiled
// with the same AVX2 + FMA + F16C target flags. The rules of avx512_util.h
// apply: include from those files only, and call no inline function of a
// shared header from them.
//
// AVX2 has 8 float lanes, so a 16-row panel is computed as two halves of 8
// rows: half h uses bytes 32h..32h+31 of every 64-byte group vector, halves
// 8h..8h+7 of every 16-half scale array and bits 32h..32h+31 of every mask.
// Without VNNI, unsigned-by-signed byte products go through vpmaddubsw
// (pairs summed into int16, which saturates - each kernel notes why its sums
// stay in range) and vpmaddwd.
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "worker/kernels/cpu/panel_gemm.h"
#include "worker/kernels/cpu/panel_layout.h"

namespace kvmesh::kernels::avx2 {

inline int32_t LoadI32(const void* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

inline float LoadF32(const void* p) {
  float v;
  std::memcpy(&v, p, 4);
  return v;
}

inline float HalfToFloat(uint16_t h) { return _cvtsh_ss(h); }

// 8 halves -> 8 floats (exact).
inline __m256 LoadHalves8(const void* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(static_cast<const __m128i*>(p)));
}

inline __m256i Load256(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }

inline __m256i Broadcast4(const int8_t* p) { return _mm256_set1_epi32(LoadI32(p)); }

inline int32_t ReduceAdd(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

inline float ReduceAdd(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float ReduceMax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline __m256 Abs(__m256 v) { return _mm256_andnot_ps(_mm256_set1_ps(-0.0f), v); }

// Rounds to nearest with halves away from zero (std::round), exactly.
inline __m256 RoundHalfAway(__m256 v) {
  const __m256 truncated = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 fraction = _mm256_sub_ps(v, truncated);  // exact
  const __m256 bump = _mm256_cmp_ps(Abs(fraction), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  const __m256 one = _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));
  return _mm256_add_ps(truncated, _mm256_and_ps(bump, one));
}

// Eight int32 -> their low bytes, as static_cast<int8_t> truncates (which
// matters only for the out-of-range values a float-to-int conversion of
// infinity or NaN gives).
inline int64_t PackInt8(__m256i v) {
  v = _mm256_and_si256(v, _mm256_set1_epi32(0xFF));
  const __m128i w16 = _mm_packus_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return _mm_cvtsi128_si64(_mm_packus_epi16(w16, w16));
}

// Each int32 replaced by its low byte, sign-extended (static_cast<int8_t>).
inline __m256i TruncateToInt8(__m256i v) { return _mm256_srai_epi32(_mm256_slli_epi32(v, 24), 24); }

// Sum of the int16 pairs of each 32-bit lane.
inline __m256i PairSums(__m256i v) { return _mm256_madd_epi16(v, _mm256_set1_epi16(1)); }

// Bytes of `v` plus 16 where the matching bit of the 32-bit mask is set.
inline __m256i AddHighBits(__m256i v, uint32_t mask) {
  const __m256i spread =
      _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int32_t>(mask)),
                          _mm256_setr_epi64x(0x0000000000000000, 0x0101010101010101,
                                             0x0202020202020202, 0x0303030303030303));
  const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
  const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
  return _mm256_add_epi8(v, _mm256_and_si256(set, _mm256_set1_epi8(16)));
}

// Decode prefetching, as on the AVX-512 tier (avx512_util.h). The half-0
// pass over a panel touches every cache line; the half-1 pass finds them
// in cache, so only half 0 prefetches.
inline constexpr size_t kPrefetchAhead = 4096;
inline constexpr size_t kPrefetchNear = 1024;
// Q4_K and Q6_K ask 16 KiB ahead, as on the AVX-512 tier (avx512_util.h):
// on the AMD EPYC VM, KVMESH_CPU_ISA=avx2, the decode stream of llama-1b
// Q4_K_M rose from 9.7-10.5 to 12.7-13.7 GB/s on one thread and from
// 16.6-17.6 to 22.3-22.4 on two.
inline constexpr size_t kPrefetchAheadFar = 16384;

template <size_t kAhead = kPrefetchAhead>
inline void PrefetchAhead(const uint8_t* p, size_t bytes) {
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  for (uintptr_t line = begin; line < end; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(line + kAhead), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(line + kPrefetchNear), _MM_HINT_T0);
  }
}

// Runs tile.Run<N>(half, first_token) for both halves of a panel over tokens
// [0, num_tokens) in tiles of 4, 2 and 1.
template <typename Tile>
inline void ForEachHalfAndTokenTile(int64_t num_tokens, const Tile& tile) {
  for (int half = 0; half < 2; ++half) {
    int64_t t = 0;
    for (; t + 4 <= num_tokens; t += 4) tile.template Run<4>(half, t);
    if (t + 2 <= num_tokens) {
      tile.template Run<2>(half, t);
      t += 2;
    }
    if (t < num_tokens) tile.template Run<1>(half, t);
  }
}

// --- Legacy 32-element block types ------------------------------------------
//
// Policy P:
//   kBlockBytes, kAffine                 as in avx512_util.h
//   kCorrectionArray                     as there, or -1 when Dot already
//                                        gives the signed sum (Q8_0)
//   Unpack(pb, half, w)                  8 group vectors for this half:
//                                        unsigned levels, or for Q8_0 the
//                                        signed levels
//   Dot(w, lv)                           exact int32 sums of one block
//   Scales(pb, half), Mins(pb, half)
template <typename P>
struct LegacyTile {
  const uint8_t* panel;
  int64_t blocks;
  const uint8_t* x;
  size_t x_stride;
  PlanarLayout layout;
  float* y;
  int64_t y_stride;

  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const int8_t* levels[kTokens];
    const float* dx[kTokens];
    const int32_t* correction[kTokens];
    const float* sx[kTokens];
    for (int t = 0; t < kTokens; ++t) {
      const uint8_t* row = x + (t0 + t) * x_stride;
      levels[t] = reinterpret_cast<const int8_t*>(row + layout.levels);
      dx[t] = reinterpret_cast<const float*>(row + layout.scales);
      correction[t] = reinterpret_cast<const int32_t*>(
          row + layout.aux +
          (P::kCorrectionArray < 0 ? 0 : P::kCorrectionArray) * layout.aux_stride);
      sx[t] = reinterpret_cast<const float*>(row + layout.aux);
    }
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t b = 0; b < blocks; ++b) {
      const uint8_t* pb = panel + b * P::kBlockBytes;
      if ((kTokens == 1 || t0 == 0) && half == 0) PrefetchAhead(pb, P::kBlockBytes);
      __m256i w[8];
      P::Unpack(pb, half, w);
      const __m256 dw = P::Scales(pb, half);
      __m256 mw;
      if constexpr (P::kAffine) mw = P::Mins(pb, half);
      for (int t = 0; t < kTokens; ++t) {
        __m256i sum = P::Dot(w, levels[t] + 32 * b);
        if constexpr (P::kCorrectionArray >= 0 && !P::kAffine) {
          sum = _mm256_add_epi32(sum, _mm256_set1_epi32(correction[t][b]));
        }
        const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(dx[t][b]));
        __m256 term = _mm256_mul_ps(_mm256_cvtepi32_ps(sum), d);
        if constexpr (P::kAffine) {
          term = _mm256_add_ps(term, _mm256_mul_ps(mw, _mm256_set1_ps(sx[t][b])));
        }
        acc[t] = _mm256_add_ps(acc[t], term);
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

template <typename P>
inline void LegacyGemm(const PanelGemmArgs& a, TensorType vec_dot_type) {
  const PlanarLayout layout = GetPlanarLayout(vec_dot_type, a.cols);
  const int64_t blocks = a.cols / 32;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const LegacyTile<P> tile{a.panels + p * blocks * P::kBlockBytes,
                             blocks,
                             a.x,
                             a.x_stride,
                             layout,
                             a.y + p * kPanelRows,
                             a.y_stride};
    ForEachHalfAndTokenTile(a.num_tokens, tile);
  }
}

// Nibble vectors -> this half's 8 group vectors (vector c: groups c, c + 4).
inline void UnpackNibbles(const uint8_t* nibbles, int half, __m256i w[8]) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (int c = 0; c < 4; ++c) {
    const __m256i v = Load256(nibbles + 64 * c + 32 * half);
    w[c] = _mm256_and_si256(v, low);
    w[c + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
  }
}

inline void AddHighBits8(const uint8_t* masks, int half, __m256i w[8]) {
  for (int g = 0; g < 8; ++g) {
    w[g] = AddHighBits(w[g], static_cast<uint32_t>(LoadI32(masks + 8 * g + 4 * half)));
  }
}

// Sum over the 32 elements of a block of unsigned levels (at most 31) times
// int8 x: four groups' vpmaddubsw pairs (each |pair| <= 2 * 31 * 127) add up
// in int16 without overflow (4 * 7874 < 2^15).
inline __m256i DotUnsigned(const __m256i w[8], const int8_t* lv) {
  __m256i lo = _mm256_maddubs_epi16(w[0], Broadcast4(lv));
  __m256i hi = _mm256_maddubs_epi16(w[4], Broadcast4(lv + 16));
  for (int g = 1; g < 4; ++g) {
    lo = _mm256_add_epi16(lo, _mm256_maddubs_epi16(w[g], Broadcast4(lv + 4 * g)));
    hi = _mm256_add_epi16(hi, _mm256_maddubs_epi16(w[g + 4], Broadcast4(lv + 4 * (g + 4))));
  }
  return _mm256_add_epi32(PairSums(lo), PairSums(hi));
}

}  // namespace kvmesh::kernels::avx2
