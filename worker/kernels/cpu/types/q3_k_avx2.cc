// Q3_K on the AVX2 tier: panel GEMM equal to the scalar reference bit for bit
// (see panel_gemm.h).
//
// Levels are made signed (level - 4, in -4..3) and multiplied with vpmaddubsw
// as |level| times x with the level's sign; a 16-element sub-block's four
// groups of pairs (each at most 2 * 4 * 127) add up in int16, and vpmaddwd
// with the (scale, scale) pair scales them in int32.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 110;
constexpr int kScaleWords = 32;
constexpr int kLow = 224;
constexpr int kHigh = 1248;

// (scale, scale) int16 pairs of this half's 8 rows for sub-block j; signed
// scales -32..31.
inline __m256i ScalePair(const uint8_t* pb, int half, int j) {
  const __m256i words = Load256(pb + kScaleWords + 64 * ((j % 8) / 4) + 32 * half);
  const __m256i top = Load256(pb + kScaleWords + 128 + 32 * half);
  const __m256i low = _mm256_and_si256(_mm256_srli_epi32(words, 8 * (j % 4) + 4 * (j / 8)),
                                       _mm256_set1_epi32(0x0F));
  const __m256i high =
      _mm256_and_si256(_mm256_srli_epi32(top, 8 * (j % 4) + 2 * (j / 4)), _mm256_set1_epi32(3));
  const __m256i scale =
      _mm256_sub_epi32(_mm256_or_si256(low, _mm256_slli_epi32(high, 4)), _mm256_set1_epi32(32));
  return _mm256_or_si256(_mm256_and_si256(scale, _mm256_set1_epi32(0xFFFF)),
                         _mm256_slli_epi32(scale, 16));
}

// This half of group g (0..3) of sub-block j as signed levels (level - 4).
inline __m256i Group(const uint8_t* pb, int half, int j, int g) {
  const int c = 4 * (j % 2) + g;
  __m256i low = Load256(pb + kLow + 64 * (8 * (j / 8) + c) + 32 * half);
  low = _mm256_and_si256(_mm256_srli_epi16(low, 2 * ((j % 8) / 2)), _mm256_set1_epi8(3));
  const int bit = 4 * (j / 8) + (j % 8) / 2;
  __m256i high = Load256(pb + kHigh + 64 * c + 32 * half);
  high = bit >= 2 ? _mm256_srli_epi16(high, bit - 2) : _mm256_slli_epi16(high, 2 - bit);
  high = _mm256_and_si256(high, _mm256_set1_epi8(4));
  return _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(4));
}

struct Q3KTile : SuperBlockPanel {
  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if ((kTokens == 1 || t0 == 0) && half == 0) PrefetchAhead(pb, kBlockBytes);
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int j = 0; j < 16; ++j) {
        const __m256i scale = ScalePair(pb, half, j);
        __m256i w[4], wabs[4];
        for (int g = 0; g < 4; ++g) {
          w[g] = Group(pb, half, j, g);
          wabs[g] = _mm256_abs_epi8(w[g]);
        }
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* lv = rows.levels[t] + 256 * sb + 16 * j;
          __m256i pairs = _mm256_maddubs_epi16(wabs[0], _mm256_sign_epi8(Broadcast4(lv), w[0]));
          for (int g = 1; g < 4; ++g) {
            pairs = _mm256_add_epi16(
                pairs,
                _mm256_maddubs_epi16(wabs[g], _mm256_sign_epi8(Broadcast4(lv + 4 * g), w[g])));
          }
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_madd_epi16(pairs, scale));
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

void GemmQ3_K(const PanelGemmArgs& a) { SuperBlockGemm<Q3KTile>(a, kBlockBytes); }

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ3_K, Tier::kAvx2> kQ3_KAvx2 = {
    .gemm = avx2::GemmQ3_K,
};

}  // namespace kvmesh::kernels
