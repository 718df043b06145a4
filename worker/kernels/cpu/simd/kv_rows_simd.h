// Helpers shared by the x86 KV row kernels (types/<type>_kv_<isa>.cc), which
// are compiled with different -m flags. Every helper is `static`: one shared
// inline copy, picked by the linker from whichever file it liked, could carry
// AVX-512 instructions into the AVX2 path. For the same reason these files
// avoid common/half.h and standard templates.
#pragma once

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <utility>

#include "worker/kernels/cpu/block_types.h"

namespace kvmesh::kv_rows {

static inline float HalfToFloatF16c(uint16_t h) { return _cvtsh_ss(h); }

static inline float Bf16ToFloatBits(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

static inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// r[i] = HorizontalSum(v[i]) for i < 8 with the same additions: lanes i and
// i + 4, then the sums 0 + 2 and 1 + 3, then those two. The AVX2 block
// kernels reduce 8 rows' lanes at once with it.
static inline __m256 SumLanes8(const __m256 v[8]) {
  __m256 s4[4];  // rows 2m (low half) and 2m + 1: their four sums of i, i + 4
  for (int m = 0; m < 4; ++m) {
    s4[m] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x20),
                          _mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x31));
  }
  // Half h of s2[m] holds rows 4m + h and 4m + h + 2: (p0 + p2, p1 + p3) each.
  __m256 s2[2];
  for (int m = 0; m < 2; ++m) {
    s2[m] = _mm256_add_ps(_mm256_shuffle_ps(s4[2 * m], s4[2 * m + 1], 0x44),
                          _mm256_shuffle_ps(s4[2 * m], s4[2 * m + 1], 0xEE));
  }
  // Element k of half h is row 2k + h.
  const __m256 s1 =
      _mm256_add_ps(_mm256_shuffle_ps(s2[0], s2[1], 0x88), _mm256_shuffle_ps(s2[0], s2[1], 0xDD));
  return _mm256_permutevar8x32_ps(s1, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// The AVX2 block kernels' end of a block of n <= 8 rows for one head: the
// rows' lane sums (lanes[n..8) are cleared) reduced by SumLanes8, times
// scale, to out[0..n), and their running maximum in *max_lanes.
static inline void StoreBlockScores8(__m256 lanes[8], int n, float scale, float* out,
                                     __m256* max_lanes) {
  for (int i = n; i < 8; ++i) lanes[i] = _mm256_setzero_ps();
  const __m256 v = _mm256_mul_ps(SumLanes8(lanes), _mm256_set1_ps(scale));
  alignas(32) float s[8];
  _mm256_store_ps(s, v);
  for (int i = 0; i < n; ++i) out[i] = s[i];
  if (n == 8) {
    *max_lanes = _mm256_max_ps(*max_lanes, v);
    return;
  }
  for (int i = n; i < 8; ++i) s[i] = -INFINITY;
  *max_lanes = _mm256_max_ps(*max_lanes, _mm256_load_ps(s));
}

// The largest of the 8 lanes.
static inline float MaxLane8(__m256 v) {
  alignas(32) float m[8];
  _mm256_store_ps(m, v);
  float best = m[0];
  for (int i = 1; i < 8; ++i) best = best < m[i] ? m[i] : best;
  return best;
}

// The 32 values of a q4_0 block as signed bytes (level - 8), in element order:
// low nibbles are elements 0..15, high nibbles 16..31.
static inline __m256i UnpackQ4_0(const kernels::BlockQ4_0& block) {
  const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(block.qs));
  const __m128i mask = _mm_set1_epi8(0x0F);
  const __m128i lo = _mm_and_si128(raw, mask);
  const __m128i hi = _mm_and_si128(_mm_srli_epi16(raw, 4), mask);
  return _mm256_sub_epi8(_mm256_set_m128i(hi, lo), _mm256_set1_epi8(8));
}

// The 32 values of a q3_nl block as signed bytes (kQ3NlLevels[code]), in
// element order: the low code bits are shifted out of four copies of ql (one
// per 8 elements), the high bits are spread from qh a byte per element, and
// the codes index the level table.
static inline __m256i UnpackQ3_NL(const kernels::BlockQ3_NL& block) {
  uint64_t ql;
  uint32_t qh;
  std::memcpy(&ql, block.ql, sizeof(ql));
  std::memcpy(&qh, block.qh, sizeof(qh));
  const __m256i low =
      _mm256_and_si256(_mm256_srlv_epi64(_mm256_set1_epi64x(static_cast<long long>(ql)),
                                         _mm256_set_epi64x(6, 4, 2, 0)),
                       _mm256_set1_epi8(3));
  const __m256i spread = _mm256_shuffle_epi8(
      _mm256_set1_epi32(static_cast<int>(qh)),
      _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
  const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
  const __m256i high =
      _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit), _mm256_set1_epi8(4));
  const __m128i levels = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(kernels::kQ3NlLevels));
  return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(levels), _mm256_or_si256(low, high));
}

// Sums of products of 32 signed bytes w·x, as 8 partial sums (each over 4
// adjacent bytes) converted to float. maddubs multiplies unsigned by signed
// bytes, so |w| is paired with x carrying w's sign. Exact for |w|, |x| <= 127
// (what the q8_0/q4_0 quantizers and the q3_nl levels give): pair sums stay
// within int16.
static inline __m256 DotBytes(__m256i w, __m256i x) {
  const __m256i abs_w = _mm256_sign_epi8(w, w);
  const __m256i signed_x = _mm256_sign_epi8(x, w);
  const __m256i pairs = _mm256_maddubs_epi16(abs_w, signed_x);
  return _mm256_cvtepi32_ps(_mm256_madd_epi16(pairs, _mm256_set1_epi16(1)));
}

// out[0..8) += scale * (8 signed bytes at `bytes`, as floats).
static inline void AccumulateBytes8(const int8_t* bytes, __m256 scale, float* out) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(bytes));
  const __m256 x = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
  _mm256_storeu_ps(out, _mm256_fmadd_ps(x, scale, _mm256_loadu_ps(out)));
}

#if defined(__AVX512BW__)
// DotBytes for 64 bytes: 16 partial sums, the low 8 from the first 32 bytes.
static inline __m512 DotBytes512(__m512i w, __m512i x) {
  const __m512i abs_w = _mm512_abs_epi8(w);
  const __mmask64 negative = _mm512_movepi8_mask(w);
  const __m512i signed_x = _mm512_mask_sub_epi8(x, negative, _mm512_setzero_si512(), x);
  const __m512i pairs = _mm512_maddubs_epi16(abs_w, signed_x);
  return _mm512_cvtepi32_ps(_mm512_madd_epi16(pairs, _mm512_set1_epi16(1)));
}

// Two 256-bit halves as one 512-bit vector (`lo` in lanes 0..7).
static inline __m512i Concat(__m256i lo, __m256i hi) {
  return _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
}

// 16 lanes: `lo` in lanes 0..7, `hi` in 8..15.
static inline __m512 SplitScale(float lo, float hi) {
  return _mm512_mask_blend_ps(0xFF00, _mm512_set1_ps(lo), _mm512_set1_ps(hi));
}

// out[0..16) += scale * (16 signed bytes, as floats).
static inline void AccumulateBytes16(__m128i bytes, __m512 scale, float* out) {
  const __m512 x = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(bytes));
  _mm512_storeu_ps(out, _mm512_fmadd_ps(x, scale, _mm512_loadu_ps(out)));
}

// Lanes [0, n) set, for tails of fewer than 16 elements.
static inline __mmask16 TailMask(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
#endif

// What the block kernels of every ISA share (internal linkage: each file
// compiles its own copy with its own flags).
namespace {

// Query heads that share one walk over K or V rows in the block kernels
// (the executor tiles up to this many).
constexpr int kMaxGroup = 8;

// Calls body.template operator()<kHeads>(g0) for the query heads
// [g0, g0 + kHeads) of n_q, in groups of up to kMaxGroup: every row a group walks
// is loaded once for all its heads, so larger groups read K and V fewer
// times.
template <typename Body>
void ForEachHeadGroup(int n_q, Body body) {
  constexpr int kMax = kMaxGroup;
  for (int g0 = 0; g0 < n_q; g0 += kMax) {
    const int n = n_q - g0 < kMax ? n_q - g0 : kMax;
    [&]<int... kI>(std::integer_sequence<int, kI...>) {
      (void)((n == kI + 1 && (body.template operator()<kI + 1>(g0), true)) || ...);
    }
    (std::make_integer_sequence<int, kMax>{});
  }
}

// Rows are fetched this many positions ahead: pages are scattered, so the
// hardware prefetcher loses the stream at each block boundary, and the walks
// are otherwise bound by the latency of those misses.
constexpr int kAhead = 16;

// Touches every cache line of the `bytes` bytes at `row` (a row that will be
// read soon).
inline void Prefetch(const uint8_t* row, int bytes) {
  const char* p = reinterpret_cast<const char*>(row);
  for (int off = 0; off < bytes; off += 64) _mm_prefetch(p + off, _MM_HINT_T0);
  _mm_prefetch(p + bytes - 1, _MM_HINT_T0);
}

}  // namespace

}  // namespace kvmesh::kv_rows
