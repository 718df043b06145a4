// IQ4_XS on the AVX2 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// A byte shuffle turns each code into its signed value; vpmaddubsw multiplies
// |value| by x with the value's sign (a pair is at most 2 * 127 * 127, so each
// group is widened to int32 before groups add up), and the signed 6-bit scale
// multiplies the sub-block's sum in int32.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 136;
constexpr int kScalesH = 32;
constexpr int kScalesL = 64;
constexpr int kCodes = 128;

struct IQ4XSTile : SuperBlockPanel {
  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if ((kTokens == 1 || t0 == 0) && half == 0) PrefetchAhead(pb, kBlockBytes);
      const __m256i low = Load256(pb + kScalesL + 32 * half);
      const __m256i high = _mm256_cvtepu16_epi32(
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + kScalesH + 16 * half)));
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int j = 0; j < 8; ++j) {
        const __m256i scale = _mm256_sub_epi32(
            _mm256_or_si256(
                _mm256_and_si256(_mm256_srli_epi32(low, 4 * j), _mm256_set1_epi32(0x0F)),
                _mm256_slli_epi32(
                    _mm256_and_si256(_mm256_srli_epi32(high, 2 * j), _mm256_set1_epi32(3)), 4)),
            _mm256_set1_epi32(32));
        __m256i w[8], wabs[8];  // group c of the sub-block in w[c]
        for (int c = 0; c < 4; ++c) {
          const __m256i v = Load256(pb + kCodes + 64 * (4 * j + c) + 32 * half);
          w[c] = _mm256_shuffle_epi8(table, _mm256_and_si256(v, nibble));
          w[c + 4] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
        }
        for (int g = 0; g < 8; ++g) wabs[g] = _mm256_abs_epi8(w[g]);
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* lv = rows.levels[t] + 256 * sb + 32 * j;
          __m256i sum =
              PairSums(_mm256_maddubs_epi16(wabs[0], _mm256_sign_epi8(Broadcast4(lv), w[0])));
          for (int g = 1; g < 8; ++g) {
            sum = _mm256_add_epi32(sum,
                                   PairSums(_mm256_maddubs_epi16(
                                       wabs[g], _mm256_sign_epi8(Broadcast4(lv + 4 * g), w[g]))));
          }
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_mullo_epi32(sum, scale));
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

void GemmIQ4_XS(const PanelGemmArgs& a) { SuperBlockGemm<IQ4XSTile>(a, kBlockBytes); }

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ4_XS, Tier::kAvx2> kIQ4_XSAvx2 = {
    .gemm = avx2::GemmIQ4_XS,
};

}  // namespace kvmesh::kernels
