// IQ3_XXS on the AVX2 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// As the AVX-512 kernel (iq3_xxs_avx512.cc), 8 rows at a time; vpmaddubsw
// pairs of values signed around 64 (at most 2 * 126 * 127) are widened to
// int32 per group.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 98;
constexpr int kIndices = 32;
constexpr int kWords = kIndices + 16 * 64;
constexpr int kOffset = 64;

struct IQ3XXSTile : SuperBlockPanel {
  LaneByteSpread spread;

  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const int* grid = reinterpret_cast<const int*>(kIq3xxsGrid.data());
    const __m256i byte_mask = _mm256_set1_epi32(0xFF);
    const __m256i code_mask = _mm256_set1_epi32(127);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if ((kTokens == 1 || t0 == 0) && half == 0) PrefetchAhead(pb, kBlockBytes);
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i word = Load256(pb + kWords + 64 * j + 32 * half);
        const __m256i odd = _mm256_add_epi32(_mm256_slli_epi32(_mm256_srli_epi32(word, 28), 1),
                                             _mm256_set1_epi32(1));
        __m256i signs = GridSigns8(_mm256_and_si256(word, code_mask));
        for (int p = 1; p < 4; ++p) {
          const __m256i codes = _mm256_and_si256(_mm256_srli_epi32(word, 7 * p), code_mask);
          signs = _mm256_or_si256(signs, _mm256_slli_epi32(GridSigns8(codes), 8 * p));
        }
        const __m256i indices[2] = {Load256(pb + kIndices + 64 * (2 * j) + 32 * half),
                                    Load256(pb + kIndices + 64 * (2 * j + 1) + 32 * half)};
        __m256i part[kTokens];
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm256_set1_epi32(-kOffset * rows.bsum32[t][8 * sb + j]);
        }
        for (int l = 0; l < 8; ++l) {
          const __m256i index =
              _mm256_and_si256(_mm256_srli_epi32(indices[l / 4], 8 * (l % 4)), byte_mask);
          const __m256i magnitudes = _mm256_i32gather_epi32(grid, index, 4);
          const __m256i w = OffsetSigned(magnitudes, GridNegativeBytes(signs, spread, l), kOffset);
          for (int t = 0; t < kTokens; ++t) {
            const int8_t* lv = rows.levels[t] + 256 * sb + 32 * j + 4 * l;
            part[t] = _mm256_add_epi32(part[t], PairSums(_mm256_maddubs_epi16(w, Broadcast4(lv))));
          }
        }
        for (int t = 0; t < kTokens; ++t) {
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_mullo_epi32(part[t], odd));
        }
      }
      const __m256 dw = _mm256_mul_ps(LoadHalves8(pb + 16 * half), _mm256_set1_ps(0.25f));
      for (int t = 0; t < kTokens; ++t) {
        const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(rows.d[t][sb]));
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

void GemmIQ3_XXS(const PanelGemmArgs& a) {
  SuperBlockGemm<IQ3XXSTile>(a, kBlockBytes, LaneByteSpread());
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ3_XXS, Tier::kAvx2> kIQ3_XXSAvx2 = {
    .gemm = avx2::GemmIQ3_XXS,
};

}  // namespace kvmesh::kernels
