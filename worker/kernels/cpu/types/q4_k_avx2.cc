// Q4_K on the AVX2 tier: panel GEMM and single-row dot product, both equal to
// the scalar reference bit for bit (see panel_gemm.h).
//
// A sub-block's 8 groups of vpmaddubsw pairs add up in int16 (each pair is at
// most 2 * 15 * 127, so 8 of them stay below 2^15), and vpmaddwd with the
// (scale, scale) pair forms scale * sum in int32.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 144;
constexpr int kScaleWords = 64;
constexpr int kNibbles = 256;

struct Q4KTile {
  const uint8_t* panel;
  int64_t super_blocks;
  const uint8_t* x;
  size_t x_stride;
  PlanarLayout layout;
  const KPickers* pickers;
  float* y;
  int64_t y_stride;

  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const __m256i low = _mm256_set1_epi8(0x0F);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      AffineKScales sm;
      DecodeAffineKScales(pb + kScaleWords, half, *pickers, &sm);
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        if ((kTokens == 1 || t0 == 0) && half == 0) {
          PrefetchAhead<kPrefetchAheadFar>(pb + j * (kBlockBytes / 8), kBlockBytes / 8);
        }
        const uint8_t* nibbles = pb + kNibbles + 64 * 8 * (j / 2) + 32 * half;
        __m256i w[8];
        for (int g = 0; g < 8; ++g) {
          __m256i v = Load256(nibbles + 64 * g);
          if (j % 2 == 1) v = _mm256_srli_epi16(v, 4);
          w[g] = _mm256_and_si256(v, low);
        }
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* lv = rows.levels[t] + 256 * sb + 32 * j;
          __m256i pairs = _mm256_maddubs_epi16(w[0], Broadcast4(lv));
          for (int g = 1; g < 8; ++g) {
            pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(w[g], Broadcast4(lv + 4 * g)));
          }
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_madd_epi16(pairs, sm.scales[j]));
        }
      }
      const __m256 dw = LoadHalves8(pb + 16 * half);
      const __m256 dminw = LoadHalves8(pb + 32 + 16 * half);
      for (int t = 0; t < kTokens; ++t) {
        acc[t] = _mm256_add_ps(
            acc[t], AffineKTerm(scaled[t], sm, rows.bsum32[t] + 8 * sb, dw, dminw, rows.d[t][sb]));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

void GemmQ4_K(const PanelGemmArgs& a) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  const KPickers pickers;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const Q4KTile tile{a.panels + p * super_blocks * kBlockBytes,
                       super_blocks,
                       a.x,
                       a.x_stride,
                       layout,
                       &pickers,
                       a.y + p * kPanelRows,
                       a.y_stride};
    ForEachHalfAndTokenTile(a.num_tokens, tile);
  }
}

float VecDotQ4_KQ8_K(int64_t n, const void* w, const void* x) {
  const __m256i low = _mm256_set1_epi8(0x0F);
  return VecDotAffineKQ8_K<144>(n, w, x, [&](const uint8_t* wb, int j) {
    __m256i v = Load256(wb + 16 + 32 * (j / 2));
    if (j % 2 == 1) v = _mm256_srli_epi16(v, 4);
    return _mm256_and_si256(v, low);
  });
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ4_K, Tier::kAvx2> kQ4_KAvx2 = {
    .vec_dot = avx2::VecDotQ4_KQ8_K,
    .gemm = avx2::GemmQ4_K,
};

}  // namespace kvmesh::kernels
