// IQ2_XS on the AVX2 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// As the AVX-512 kernel (iq2_xs_avx512.cc), 8 rows at a time; vpmaddubsw
// pairs of values signed around 64 are widened to int32 per half-group.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 74;
constexpr int kWords = 32;
constexpr int kScales = kWords + 16 * 64;
constexpr int kOffset = 64;

struct IQ2XSTile : SuperBlockPanel {
  LaneByteSpread spread;

  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const int* grid = reinterpret_cast<const int*>(kIq2xsGrid.data());
    const __m256i index_mask = _mm256_set1_epi32(511);
    const __m256i code_mask = _mm256_set1_epi32(127);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if ((kTokens == 1 || t0 == 0) && half == 0) PrefetchAhead(pb, kBlockBytes);
      const __m256i scales[2] = {Load256(pb + kScales + 32 * half),
                                 Load256(pb + kScales + 64 + 32 * half)};
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int r = 0; r < 16; ++r) {  // runs of 16: groups 2r, 2r + 1
        const __m256i odd = _mm256_add_epi32(
            _mm256_slli_epi32(_mm256_and_si256(_mm256_srli_epi32(scales[r / 8], 4 * (r % 8)),
                                               _mm256_set1_epi32(0x0F)),
                              1),
            _mm256_set1_epi32(1));
        const __m256i words = Load256(pb + kWords + 64 * r + 32 * half);
        __m256i part[kTokens];
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm256_set1_epi32(-kOffset * rows.bsum16[t][16 * sb + r]);
        }
        for (int g = 0; g < 2; ++g) {
          const __m256i word = _mm256_srli_epi32(words, 16 * g);
          const __m256i index = _mm256_and_si256(word, index_mask);
          const __m256i signs = GridSigns8(_mm256_and_si256(_mm256_srli_epi32(word, 9), code_mask));
          for (int h = 0; h < 2; ++h) {
            const __m256i magnitudes = _mm256_i32gather_epi32(grid + h, index, 8);
            const __m256i w =
                OffsetSigned(magnitudes, GridNegativeBytes(signs, spread, h), kOffset);
            for (int t = 0; t < kTokens; ++t) {
              const int8_t* lv = rows.levels[t] + 256 * sb + 16 * r + 8 * g + 4 * h;
              part[t] =
                  _mm256_add_epi32(part[t], PairSums(_mm256_maddubs_epi16(w, Broadcast4(lv))));
            }
          }
        }
        for (int t = 0; t < kTokens; ++t) {
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_mullo_epi32(part[t], odd));
        }
      }
      const __m256 dw = _mm256_mul_ps(LoadHalves8(pb + 16 * half), _mm256_set1_ps(0.125f));
      for (int t = 0; t < kTokens; ++t) {
        const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(rows.d[t][sb]));
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

void GemmIQ2_XS(const PanelGemmArgs& a) {
  SuperBlockGemm<IQ2XSTile>(a, kBlockBytes, LaneByteSpread());
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ2_XS, Tier::kAvx2> kIQ2_XSAvx2 = {
    .gemm = avx2::GemmIQ2_XS,
};

}  // namespace kvmesh::kernels
