// Helpers shared by the AVX-512 kernel files (*_avx512.cc), which are all
// compiled with the same AVX-512 target flags. Include this header from those
// files only: every function here is inline code for that tier, and a copy
// emitted into a file built for another tier could be the one the linker
// keeps. For the same reason the AVX-512 files call no inline function of a
// shared header (half.h, std:: algorithms) - only intrinsics, their own code
// and out-of-line functions.
#pragma once

// GCC 12 warns about the deliberately undefined registers inside its own
// AVX-512 intrinsics (GCC bug 105593); only its header is exempted.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include <cstdint>
#include <cstring>

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/panel_gemm.h"
#include "worker/kernels/cpu/panel_layout.h"

namespace kvmesh::kernels::avx512 {

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

// 16 halves -> 16 floats (exact).
inline __m512 LoadHalves16(const void* p) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}

inline float HalfToFloat(uint16_t h) { return _cvtsh_ss(h); }

// Four int8 activation levels broadcast to every lane.
inline __m512i Broadcast4(const int8_t* p) { return _mm512_set1_epi32(LoadI32(p)); }

inline int32_t ReduceAdd(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// Rounds to nearest with halves away from zero (std::round), exactly.
inline __m512 RoundHalfAway(__m512 v) {
  const __m512 truncated = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m512 fraction = _mm512_sub_ps(v, truncated);  // exact
  const __m512 abs_fraction = _mm512_abs_ps(fraction);
  const __mmask16 bump = _mm512_cmp_ps_mask(abs_fraction, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 one = _mm512_or_ps(_mm512_set1_ps(1.0f),
                                  _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));  // copysign(1, v)
  return _mm512_mask_add_ps(truncated, bump, truncated, one);
}

// Decode streams each weight byte from memory exactly once, with little
// arithmetic per byte. Asking for the bytes kPrefetchAhead ahead into L2 (the
// hardware prefetcher stops at every 4 KiB page) and kPrefetchNear ahead into
// L1 keeps more requests in flight: measured on llama-1b Q4_0 decode, 2
// threads, 25.5 -> 32 tokens/s.
inline constexpr size_t kPrefetchAhead = 4096;
inline constexpr size_t kPrefetchNear = 1024;
// Q4_K's and Q6_K's one-token kernels ask 16 KiB ahead into L2: on an AMD
// EPYC VM (2 cores) their decode stream on one thread rose from 15.7-17.5
// to 18.6-20.1 GB/s (Q4_K) and 12.2-15.1 to 18.9-21.8 GB/s (Q6_K), and held
// on two (kvmesh_kernel_bench --model llama-1b-q4_k_m). The other types'
// kernels stay at 4 KiB: IQ4_XS and IQ3_S fell by 15-40% at 16 KiB, Q2_K
// and Q3_K moved both ways, and Q5_K gained nothing.
inline constexpr size_t kPrefetchAheadFar = 16384;

// Prefetches the cache lines that start in [p, p + bytes), shifted ahead;
// consecutive calls over consecutive ranges touch every line once.
template <size_t kAhead = kPrefetchAhead>
inline void PrefetchAhead(const uint8_t* p, size_t bytes) {
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t{63};
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + bytes;
  for (uintptr_t line = begin; line < end; line += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(line + kAhead), _MM_HINT_T1);
    _mm_prefetch(reinterpret_cast<const char*>(line + kPrefetchNear), _MM_HINT_T0);
  }
}

// Runs tile.Run<N>(first_token) over tokens [0, num_tokens) in tiles of
// kMaxTile (8 or 16), then 8, 4, 2 and 1 tokens. Every tile width computes
// each output with the same operations, so the split never changes a result.
template <int kMaxTile = 8, typename Tile>
inline void ForEachTokenTile(int64_t num_tokens, const Tile& tile) {
  int64_t t = 0;
  if constexpr (kMaxTile == 16) {
    for (; t + 16 <= num_tokens; t += 16) tile.template Run<16>(t);
  }
  for (; t + 8 <= num_tokens; t += 8) tile.template Run<8>(t);
  if (t + 4 <= num_tokens) {
    tile.template Run<4>(t);
    t += 4;
  }
  if (t + 2 <= num_tokens) {
    tile.template Run<2>(t);
    t += 2;
  }
  if (t < num_tokens) tile.template Run<1>(t);
}

// --- Legacy 32-element block types (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0) --------------
//
// A policy P describes one type's panel-block:
//   kBlockBytes          bytes of a panel-block
//   kAffine              x = d*level + m (pairs with Q8_1) instead of d*(level - offset)
//   kCorrectionArray     which of the planar row's -offset * sum(x) arrays
//                        holds this type's offset (0: 8, 1: 16, 2: 128);
//                        unused when affine
//   Unpack(pb, w)        the 8 group vectors as unsigned levels
//   Scales(pb), Mins(pb) d (and m) of the 16 rows
//
// Per block and token the integer sum is formed exactly (the offset is
// folded in as -offset * sum(x), precomputed in the planar row), then the float
// steps are the reference's: acc += float(sum) * (dw * dx) [+ m * s].
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
  void Run(int64_t t0) const {
    // One pointer per token; every operand of a block is at a fixed offset
    // from it, so the unrolled token loop needs few registers.
    const uint8_t* rows[kTokens];
    for (int t = 0; t < kTokens; ++t) rows[t] = x + (t0 + t) * x_stride;
    const size_t corr =
        P::kAffine ? layout.aux : layout.aux + P::kCorrectionArray * layout.aux_stride;
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    const uint8_t* pb = panel;
    size_t levels = layout.levels, scales = layout.scales, extra = corr;
    for (int64_t b = 0; b < blocks;
         ++b, pb += P::kBlockBytes, levels += 32, scales += 4, extra += 4) {
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, P::kBlockBytes);
      __m512i w[8];
      P::Unpack(pb, w);
      const __m512 dw = P::Scales(pb);
      __m512 mw;
      if constexpr (P::kAffine) mw = P::Mins(pb);
      // Groups outer, tokens inner: the tokens' integer sums are independent
      // chains, so the dot-product latency overlaps.
      __m512i sum[kTokens];
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        sum[t] = P::kAffine ? _mm512_setzero_si512()
                            : _mm512_set1_epi32(LoadI32(rows[t] + extra));  // -offset * sum(x)
      }
#pragma GCC unroll 8
      for (int g = 0; g < 8; ++g) {
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* lv = reinterpret_cast<const int8_t*>(rows[t] + levels);
          sum[t] = _mm512_dpbusd_epi32(sum[t], w[g], Broadcast4(lv + 4 * g));
        }
      }
#pragma GCC unroll 8
      for (int t = 0; t < kTokens; ++t) {
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(LoadF32(rows[t] + scales)));
        __m512 term = _mm512_mul_ps(_mm512_cvtepi32_ps(sum[t]), d);
        if constexpr (P::kAffine) {
          term = _mm512_add_ps(term, _mm512_mul_ps(mw, _mm512_set1_ps(LoadF32(rows[t] + extra))));
        }
        acc[t] = _mm512_add_ps(acc[t], term);
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
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
    ForEachTokenTile(a.num_tokens, tile);
  }
}

// The IQ4 types' values + 128 (unsigned, for vpdpbusd) in byte c of every
// 128-bit lane, built at compile time: a kernel loads it with one load and
// turns codes into values with one byte shuffle.
struct Iq4Bytes {
  alignas(64) uint8_t bytes[64];
};
constexpr Iq4Bytes MakeIq4Bytes() {
  Iq4Bytes t{};
  for (int i = 0; i < 64; ++i) t.bytes[i] = static_cast<uint8_t>(kIq4Values[i % 16] + 128);
  return t;
}
inline constexpr Iq4Bytes kIq4Bytes = MakeIq4Bytes();

// Nibble vectors -> 8 group vectors: vector c gives groups c (low) and c + 4.
inline void UnpackNibbles(const uint8_t* nibbles, __m512i w[8]) {
  const __m512i low = _mm512_set1_epi8(0x0F);
  for (int c = 0; c < 4; ++c) {
    const __m512i v = _mm512_loadu_si512(nibbles + 64 * c);
    w[c] = _mm512_and_si512(v, low);
    w[c + 4] = _mm512_and_si512(_mm512_srli_epi16(v, 4), low);
  }
}

// Adds 16 to the bytes whose bit is set in the eight masks (fifth bits).
inline void AddHighBits(const uint8_t* masks, __m512i w[8]) {
  const __m512i sixteen = _mm512_set1_epi8(16);
  for (int g = 0; g < 8; ++g) {
    __mmask64 m;
    std::memcpy(&m, masks + 8 * g, 8);
    w[g] = _mm512_mask_add_epi8(w[g], m, w[g], sixteen);
  }
}

}  // namespace kvmesh::kernels::avx512
