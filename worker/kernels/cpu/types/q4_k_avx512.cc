// Q4_K on the AVX-512 tier: panel GEMM and single-row dot product, both equal
// to the scalar reference bit for bit (see panel_gemm.h).
//
// Per sub-block of 32 the exact sum of level * x is formed in two halves of
// 16 elements (each fits in int16: 16 * 15 * 127 < 2^15), so vpdpwssd can
// multiply it by the 6-bit scale and accumulate in one step. The mins are
// applied per super-block with vpdpwssd on (min, min) x (bsum32, bsum32).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 144;
constexpr int kScaleWords = 64;
constexpr int kNibbles = 256;

struct Pickers {
  __m512i scale[4];
  __m512i pairs[2];
  Pickers() {
    for (int k = 0; k < 4; ++k) scale[k] = LaneBytePicker(k, -1);
    pairs[0] = LaneBytePicker(0, 1);
    pairs[1] = LaneBytePicker(2, 3);
  }
};

struct Q4KTile {
  const uint8_t* panel;
  int64_t super_blocks;
  const uint8_t* x;
  size_t x_stride;
  PlanarLayout layout;
  const Pickers* pickers;
  float* y;
  int64_t y_stride;

  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const __m512i low = _mm512_set1_epi8(0x0F);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      const AffineKScaleBytes scale_bytes = LoadAffineKScaleBytes(pb + kScaleWords);
      // Two scaled sums per token, one per half sub-block: each is a chain of
      // 8 vpdpwssd per super-block instead of 16, short enough to hide.
      // Wide tiles keep one: their tokens are enough independent chains, and
      // registers run out otherwise. Integer sums: the split changes no bit.
      constexpr int kParts = kTokens >= 4 ? 1 : 2;
      __m512i scaled[kParts][kTokens];
      for (int e = 0; e < kParts; ++e) {
        for (int t = 0; t < kTokens; ++t) scaled[e][t] = _mm512_setzero_si512();
      }
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        // Spread over the sub-blocks: a burst of prefetches would stall.
        if (kTokens == 1 || t0 == 0) {
          PrefetchAhead<kPrefetchAheadFar>(pb + j * (kBlockBytes / 8), kBlockBytes / 8);
        }
        // Sub-block j: nibble vectors 8 * (j / 2) + g, low nibbles for even j.
        const __m512i scale_j = AffineKScale(scale_bytes, pickers->scale, j);
        const uint8_t* nibbles = pb + kNibbles + 64 * 8 * (j / 2);
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {  // the two halves of 16 elements
          __m512i w[4];
          for (int g = 0; g < 4; ++g) {
            __m512i v = _mm512_loadu_si512(nibbles + 64 * (4 * h + g));
            if (j % 2 == 1) v = _mm512_srli_epi16(v, 4);
            w[g] = _mm512_and_si512(v, low);
          }
          // Groups outer, tokens inner: independent chains per token.
          __m512i half[kTokens];
#pragma GCC unroll 8
          for (int t = 0; t < kTokens; ++t) half[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
          for (int g = 0; g < 4; ++g) {
#pragma GCC unroll 8
            for (int t = 0; t < kTokens; ++t) {
              const int8_t* lv = rows.levels(t) + 256 * sb + 32 * j + 16 * h + 4 * g;
              half[t] = _mm512_dpbusd_epi32(half[t], w[g], Broadcast4(lv));
            }
          }
#pragma GCC unroll 8
          for (int t = 0; t < kTokens; ++t) {
            __m512i& sum = scaled[kParts == 2 ? h : 0][t];
            sum = _mm512_dpwssd_epi32(sum, half[t], scale_j);
          }
        }
      }
      __m512i mins[4];
      DecodeAffineKMins(pb + kScaleWords, pickers->pairs, mins);
      const __m512 dw = LoadHalves16(pb);
      const __m512 dminw = LoadHalves16(pb + 32);
      for (int t = 0; t < kTokens; ++t) {
        const int16_t* bs = rows.bsum32(t) + 8 * sb;
        __m512i min_sum = _mm512_setzero_si512();
        for (int m = 0; m < 4; ++m) {
          min_sum = _mm512_dpwssd_epi32(min_sum, mins[m], _mm512_set1_epi32(LoadI32(bs + 2 * m)));
        }
        const __m512 dx = _mm512_set1_ps(rows.d(t)[sb]);
        const __m512 d = _mm512_mul_ps(dw, dx);
        const __m512 dmin = _mm512_mul_ps(dminw, dx);
        __m512i scaled_sum = scaled[0][t];
        if constexpr (kParts == 2) scaled_sum = _mm512_add_epi32(scaled_sum, scaled[1][t]);
        const __m512 term = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled_sum)),
                                          _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min_sum)));
        acc[t] = _mm512_add_ps(acc[t], term);
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

void GemmQ4_K(const PanelGemmArgs& a) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  const Pickers pickers;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const Q4KTile tile{a.panels + p * super_blocks * kBlockBytes,
                       super_blocks,
                       a.x,
                       a.x_stride,
                       layout,
                       &pickers,
                       a.y + p * kPanelRows,
                       a.y_stride};
    ForEachTokenTile(a.num_tokens, tile);
  }
}

float VecDotQ4_KQ8_K(int64_t n, const void* w, const void* x) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  return VecDotAffineKQ8_K<144>(n, w, x, [&](const uint8_t* wb, int j) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 16 + 32 * (j / 2)));
    if (j % 2 == 1) v = _mm256_srli_epi16(v, 4);
    return _mm256_and_si256(v, low);
  });
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ4_K, Tier::kAvx512> kQ4_KAvx512 = {
    .vec_dot = avx512::VecDotQ4_KQ8_K,
    .gemm = avx512::GemmQ4_K,
};

}  // namespace kvmesh::kernels
