// Q5_K on the AVX-512 tier: panel GEMM and single-row dot product, both equal
// to the scalar reference bit for bit (see panel_gemm.h).
//
// A sub-block's sum of level * x (levels 0..31) does not fit in int16, so it
// is formed whole in int32 and multiplied by its 6-bit scale with vpmulld.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 176;
constexpr int kScaleWords = 64;
constexpr int kMasks = 256;
constexpr int kNibbles = 768;

struct Pickers {
  __m512i scale[4];
  __m512i pairs[2];
  Pickers() {
    for (int k = 0; k < 4; ++k) scale[k] = LaneBytePicker(k, -1);
    pairs[0] = LaneBytePicker(0, 1);
    pairs[1] = LaneBytePicker(2, 3);
  }
};

struct Q5KTile {
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
    const __m512i sixteen = _mm512_set1_epi8(16);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      const AffineKScaleBytes scale_bytes = LoadAffineKScaleBytes(pb + kScaleWords);
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        // Spread over the sub-blocks: a burst of prefetches would stall.
        if (kTokens == 1 || t0 == 0) PrefetchAhead(pb + j * (kBlockBytes / 8), kBlockBytes / 8);
        const __m512i scale_j = AffineKScale(scale_bytes, pickers->scale, j);
        const uint8_t* nibbles = pb + kNibbles + 64 * 8 * (j / 2);
        __m512i w[8];
        for (int g = 0; g < 8; ++g) {
          __m512i v = _mm512_loadu_si512(nibbles + 64 * g);
          if (j % 2 == 1) v = _mm512_srli_epi16(v, 4);
          __mmask64 high;
          std::memcpy(&high, pb + kMasks + 8 * (8 * j + g), 8);
          w[g] = _mm512_mask_add_epi8(_mm512_and_si512(v, low), high, _mm512_and_si512(v, low),
                                      sixteen);
        }
        __m512i sub[kTokens];
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) sub[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
        for (int g = 0; g < 8; ++g) {
#pragma GCC unroll 8
          for (int t = 0; t < kTokens; ++t) {
            const int8_t* lv = rows.levels(t) + 256 * sb + 32 * j;
            sub[t] = _mm512_dpbusd_epi32(sub[t], w[g], Broadcast4(lv + 4 * g));
          }
        }
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
          scaled[t] = _mm512_add_epi32(scaled[t], _mm512_mullo_epi32(sub[t], scale_j));
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
        const __m512 term = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled[t])),
                                          _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min_sum)));
        acc[t] = _mm512_add_ps(acc[t], term);
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

void GemmQ5_K(const PanelGemmArgs& a) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  const Pickers pickers;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const Q5KTile tile{a.panels + p * super_blocks * kBlockBytes,
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

float VecDotQ5_KQ8_K(int64_t n, const void* w, const void* x) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i one = _mm256_set1_epi8(1);
  return VecDotAffineKQ8_K<176>(n, w, x, [&](const uint8_t* wb, int j) {
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 16));
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 48 + 32 * (j / 2)));
    if (j % 2 == 1) v = _mm256_srli_epi16(v, 4);
    const __m256i high = _mm256_and_si256(_mm256_srli_epi16(qh, j), one);
    return _mm256_or_si256(_mm256_and_si256(v, low), _mm256_slli_epi16(high, 4));
  });
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ5_K, Tier::kAvx512> kQ5_KAvx512 = {
    .vec_dot = avx512::VecDotQ5_KQ8_K,
    .gemm = avx512::GemmQ5_K,
};

}  // namespace kvmesh::kernels
