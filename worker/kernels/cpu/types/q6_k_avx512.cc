// Q6_K on the AVX-512 tier: panel GEMM and single-row dot product, both equal
// to the scalar reference bit for bit (see panel_gemm.h).
//
// Levels are used unsigned (0..63) and the offset 32 is folded in per 8
// elements from the planar row's neg32_sum8; the sum of (level - 32) * x over
// 8 elements fits in int16 (8 * 32 * 127 < 2^15), so vpdpwssd multiplies it
// by the signed sub-block scale and accumulates in one step.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 210;
constexpr int kScales = kQ6KScales;
constexpr int kLow = kQ6KLow;
constexpr int kHigh = kQ6KHigh;

struct Q6KTile {
  const uint8_t* panel;
  int64_t super_blocks;
  const uint8_t* x;
  size_t x_stride;
  PlanarLayout layout;
  float* y;
  int64_t y_stride;

  template <int kTokens, int kParts, int kQ>
  [[gnu::noinline]] static void Quarter(const uint8_t* pb, const Q8KRows<kTokens>& rows, int64_t sb,
                                        bool prefetch, __m512i (&scaled_io)[kParts][kTokens]) {
    const __m512i low16 = _mm512_set1_epi32(0xFFFF);
    __m512i scaled[kParts][kTokens];
    for (int e = 0; e < kParts; ++e) {
      for (int t = 0; t < kTokens; ++t) scaled[e][t] = scaled_io[e][t];
    }
#pragma GCC unroll 4
    for (int j = 4 * kQ; j < 4 * kQ + 4; ++j) {
      // Spread over the sub-blocks: a burst of prefetches would stall.
      if (prefetch) {
        PrefetchAhead<kPrefetchAheadFar>(pb + j * (kBlockBytes / 16), kBlockBytes / 16);
        // The next super-block's first quarter reads all its top-bit vectors
        // and the first half of its nibbles, out of the order PrefetchAhead
        // walks; the last two quarters read nothing new, so they bring those
        // bytes into L1 ahead of time.
        if constexpr (kQ >= 2) {
          const uint8_t* next = pb + kBlockBytes + (kQ == 2 ? kHigh : kLow) + 256 * (j % 4);
          for (int line = 0; line < 4; ++line) {
            _mm_prefetch(reinterpret_cast<const char*>(next + 64 * line), _MM_HINT_T0);
          }
        }
      }
      // Signed scale of each row for sub-block j, in the low int16 of its lane.
      const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + kScales + 16 * j));
      const __m512i scale = _mm512_and_si512(_mm512_cvtepi8_epi32(s), low16);
      __m512i w[4];
      for (int g = 0; g < 4; ++g) w[g] = Q6KGroup(pb, 4 * j + g);
#pragma GCC unroll 2
      for (int e = 0; e < 2; ++e) {  // two 8-element parts per sub-block
        __m512i part[kTokens];
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm512_set1_epi32(rows.neg32_sum8(t)[32 * sb + 2 * j + e]);
        }
#pragma GCC unroll 2
        for (int g = 0; g < 2; ++g) {
#pragma GCC unroll 8
          for (int t = 0; t < kTokens; ++t) {
            const int8_t* lv = rows.levels(t) + 256 * sb + 16 * j + 8 * e + 4 * g;
            part[t] = _mm512_dpbusd_epi32(part[t], w[2 * e + g], Broadcast4(lv));
          }
        }
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
          __m512i& sum = scaled[kParts == 2 ? e : 0][t];
          sum = _mm512_dpwssd_epi32(sum, part[t], scale);
        }
      }
    }
    for (int e = 0; e < kParts; ++e) {
      for (int t = 0; t < kTokens; ++t) scaled_io[e][t] = scaled[e][t];
    }
  }

  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    // Scaled sums per token: two (one per 8-element part) for short tiles,
    // so each chain of vpdpwssd is short enough to hide its latency; one for
    // wide tiles, whose tokens are enough independent chains and which would
    // otherwise run out of registers. Integer sums: the split changes no bit.
    constexpr int kParts = kTokens >= 4 ? 1 : 2;
    // The float sums live in y between super-blocks, not in registers: a
    // wide tile's partial and scaled sums, weights and constants fill the 32
    // vector registers, and the spills cost more than one load and store per
    // token and super-block. Same additions in the same order.
    float* out[kTokens];
    for (int t = 0; t < kTokens; ++t) {
      out[t] = y + (t0 + t) * y_stride;
      _mm512_storeu_ps(out[t], _mm512_setzero_ps());
    }
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      __m512i scaled[kParts][kTokens];
      for (int e = 0; e < kParts; ++e) {
        for (int t = 0; t < kTokens; ++t) scaled[e][t] = _mm512_setzero_si512();
      }
      // One call per quarter of the super-block (four sub-blocks): every
      // shift in Q6KGroup is a constant, and the compiler schedules four
      // sub-blocks at a time instead of interleaving all sixteen (which
      // spilled the scaled sums on every vpdpwssd).
      const bool prefetch = kTokens == 1 || t0 == 0;
      Quarter<kTokens, kParts, 0>(pb, rows, sb, prefetch, scaled);
      Quarter<kTokens, kParts, 1>(pb, rows, sb, prefetch, scaled);
      Quarter<kTokens, kParts, 2>(pb, rows, sb, prefetch, scaled);
      Quarter<kTokens, kParts, 3>(pb, rows, sb, prefetch, scaled);
      const __m512 dw = LoadHalves16(pb);
      for (int t = 0; t < kTokens; ++t) {
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(rows.d(t)[sb]));
        __m512i scaled_sum = scaled[0][t];
        if constexpr (kParts == 2) scaled_sum = _mm512_add_epi32(scaled_sum, scaled[1][t]);
        const __m512 term = _mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled_sum));
        _mm512_storeu_ps(out[t], _mm512_add_ps(_mm512_loadu_ps(out[t]), term));
      }
    }
  }
};

void GemmQ6_K(const PanelGemmArgs& a) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const Q6KTile tile{a.panels + p * super_blocks * kBlockBytes,
                       super_blocks,
                       a.x,
                       a.x_stride,
                       layout,
                       a.y + p * kPanelRows,
                       a.y_stride};
    ForEachTokenTile(a.num_tokens, tile);
  }
}

float VecDotQ6_KQ8_K(int64_t n, const void* w, const void* x) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);  // blocks of 210 bytes
  const uint8_t* xb = static_cast<const uint8_t*>(x);  // blocks of 292 bytes
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i three = _mm256_set1_epi8(3);
  const __m256i offset = _mm256_set1_epi8(32);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b, wb += 210, xb += 292) {
    const uint8_t* ql = wb;
    const uint8_t* qh = wb + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(wb + 192);
    int32_t scaled_sum = 0;
    for (int half = 0; half < 2; ++half) {
      const __m256i high_bits =
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * half));
      for (int quarter = 0; quarter < 4; ++quarter) {
        // Elements 128 half + 32 quarter + l, l = 0..31: sub-blocks 2q', 2q'+1.
        __m256i v = _mm256_loadu_si256(
            reinterpret_cast<const __m256i*>(ql + 64 * half + 32 * (quarter % 2)));
        if (quarter >= 2) v = _mm256_srli_epi16(v, 4);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(high_bits, 2 * quarter), three);
        const __m256i levels =
            _mm256_or_si256(_mm256_and_si256(v, low), _mm256_slli_epi16(high, 4));
        const int e0 = 128 * half + 32 * quarter;
        const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + 4 + e0));
        const __m256i dot =
            _mm256_sub_epi32(_mm256_dpbusd_epi32(_mm256_setzero_si256(), levels, xq),
                             _mm256_dpbusd_epi32(_mm256_setzero_si256(), offset, xq));
        // Lanes 0..3 cover the first 16 elements, lanes 4..7 the next 16.
        const int32_t first = ReduceAdd(_mm256_blend_epi32(dot, _mm256_setzero_si256(), 0xF0));
        const int32_t second = ReduceAdd(_mm256_blend_epi32(dot, _mm256_setzero_si256(), 0x0F));
        scaled_sum += scales[e0 / 16] * first;
        scaled_sum += scales[e0 / 16 + 1] * second;
      }
    }
    uint16_t dh;
    std::memcpy(&dh, wb + 208, 2);
    sum += HalfToFloat(dh) * LoadF32(xb) * static_cast<float>(scaled_sum);
  }
  return sum;
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ6_K, Tier::kAvx512> kQ6_KAvx512 = {
    .vec_dot = avx512::VecDotQ6_KQ8_K,
    .gemm = avx512::GemmQ6_K,
};

}  // namespace kvmesh::kernels
