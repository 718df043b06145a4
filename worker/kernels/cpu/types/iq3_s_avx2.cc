// IQ3_S on the AVX2 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// As the AVX-512 kernel (iq3_s_avx512.cc), 8 rows at a time: points gathered
// from the codebook, signed around 16, vpmaddubsw against x (a pair is at
// most 2 * 31 * 127) widened to int32 per group, from -16 times bsum32.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 110;
constexpr int kQs = 32;
constexpr int kQh = kQs + 16 * 64;
constexpr int kSigns = kQh + 2 * 64;
constexpr int kScales = kSigns + 8 * 64;
constexpr int kOffset = 16;

struct IQ3STile : SuperBlockPanel {
  LaneByteSpread spread;

  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const int* grid = reinterpret_cast<const int*>(kIq3sGrid.data());
    const __m256i byte_mask = _mm256_set1_epi32(0xFF);
    const __m256i high_bit = _mm256_set1_epi32(0x100);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if ((kTokens == 1 || t0 == 0) && half == 0) PrefetchAhead(pb, kBlockBytes);
      const __m256i scales = Load256(pb + kScales + 32 * half);
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i odd = _mm256_add_epi32(
            _mm256_slli_epi32(
                _mm256_and_si256(_mm256_srli_epi32(scales, 4 * j), _mm256_set1_epi32(0x0F)), 1),
            _mm256_set1_epi32(1));
        const __m256i qs[2] = {Load256(pb + kQs + 64 * (2 * j) + 32 * half),
                               Load256(pb + kQs + 64 * (2 * j + 1) + 32 * half)};
        const __m256i qh =
            _mm256_srli_epi32(Load256(pb + kQh + 64 * (j / 4) + 32 * half), 8 * (j % 4));
        const __m256i signs = Load256(pb + kSigns + 64 * j + 32 * half);
        __m256i part[kTokens];
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm256_set1_epi32(-kOffset * rows.bsum32[t][8 * sb + j]);
        }
        for (int l = 0; l < 8; ++l) {
          const __m256i index = _mm256_or_si256(
              _mm256_and_si256(_mm256_srli_epi32(qs[l / 4], 8 * (l % 4)), byte_mask),
              _mm256_and_si256(_mm256_slli_epi32(qh, 8 - l), high_bit));
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
      const __m256 dw = LoadHalves8(pb + 16 * half);
      for (int t = 0; t < kTokens; ++t) {
        const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(rows.d[t][sb]));
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

void GemmIQ3_S(const PanelGemmArgs& a) {
  SuperBlockGemm<IQ3STile>(a, kBlockBytes, LaneByteSpread());
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ3_S, Tier::kAvx2> kIQ3_SAvx2 = {
    .gemm = avx2::GemmIQ3_S,
};

}  // namespace kvmesh::kernels
