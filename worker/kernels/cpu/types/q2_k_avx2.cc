// Q2_K on the AVX2 tier: panel GEMM equal to the scalar reference bit for bit
// (see panel_gemm.h).
//
// A 16-element sub-block's four groups of vpmaddubsw pairs (levels 0..3, each
// pair at most 2 * 3 * 127) add up in int16, and vpmaddwd with the (scale,
// scale) pair scales them in int32. The mins are applied per super-block with
// vpmaddwd on (min, min) pairs times the planar row's bsum16 pairs.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 84;
constexpr int kScaleWords = 64;
constexpr int kLevels = 320;

// This half's byte of the scale word for sub-block j, in the low byte of
// each lane (scale in its low nibble, min in its high one).
inline __m256i ScaleByte(const uint8_t* pb, int half, int j) {
  return _mm256_srli_epi32(Load256(pb + kScaleWords + 64 * (j / 4) + 32 * half), 8 * (j % 4));
}

inline __m256i Group(const uint8_t* pb, int half, int j, int g) {
  const __m256i v = Load256(pb + kLevels + 64 * (8 * (j / 8) + 4 * (j % 2) + g) + 32 * half);
  return _mm256_and_si256(_mm256_srli_epi16(v, 2 * ((j % 8) / 2)), _mm256_set1_epi8(3));
}

struct Q2KTile : SuperBlockPanel {
  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const __m256i nibble = _mm256_set1_epi32(0x0F);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if ((kTokens == 1 || t0 == 0) && half == 0) PrefetchAhead(pb, kBlockBytes);
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int j = 0; j < 16; ++j) {
        const __m256i s = _mm256_and_si256(ScaleByte(pb, half, j), nibble);
        const __m256i scale = _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
        __m256i w[4];
        for (int g = 0; g < 4; ++g) w[g] = Group(pb, half, j, g);
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* lv = rows.levels[t] + 256 * sb + 16 * j;
          __m256i pairs = _mm256_maddubs_epi16(w[0], Broadcast4(lv));
          for (int g = 1; g < 4; ++g) {
            pairs = _mm256_add_epi16(pairs, _mm256_maddubs_epi16(w[g], Broadcast4(lv + 4 * g)));
          }
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_madd_epi16(pairs, scale));
        }
      }
      __m256i mins[8];  // (min 2k, min 2k+1) int16 pairs
      for (int k = 0; k < 8; ++k) {
        const __m256i first =
            _mm256_and_si256(_mm256_srli_epi32(ScaleByte(pb, half, 2 * k), 4), nibble);
        const __m256i second =
            _mm256_and_si256(_mm256_srli_epi32(ScaleByte(pb, half, 2 * k + 1), 4), nibble);
        mins[k] = _mm256_or_si256(first, _mm256_slli_epi32(second, 16));
      }
      const __m256 dw = LoadHalves8(pb + 16 * half);
      const __m256 dminw = LoadHalves8(pb + 32 + 16 * half);
      for (int t = 0; t < kTokens; ++t) {
        const int16_t* bs = rows.bsum16[t] + 16 * sb;
        __m256i min_sum = _mm256_madd_epi16(mins[0], _mm256_set1_epi32(LoadI32(bs)));
        for (int k = 1; k < 8; ++k) {
          min_sum = _mm256_add_epi32(
              min_sum, _mm256_madd_epi16(mins[k], _mm256_set1_epi32(LoadI32(bs + 2 * k))));
        }
        const __m256 dx = _mm256_set1_ps(rows.d[t][sb]);
        const __m256 d = _mm256_mul_ps(dw, dx);
        const __m256 dmin = _mm256_mul_ps(dminw, dx);
        const __m256 term = _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(scaled[t])),
                                          _mm256_mul_ps(dmin, _mm256_cvtepi32_ps(min_sum)));
        acc[t] = _mm256_add_ps(acc[t], term);
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

void GemmQ2_K(const PanelGemmArgs& a) { SuperBlockGemm<Q2KTile>(a, kBlockBytes); }

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ2_K, Tier::kAvx2> kQ2_KAvx2 = {
    .gemm = avx2::GemmQ2_K,
};

}  // namespace kvmesh::kernels
