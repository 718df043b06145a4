// IQ3_S on the AVX2 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// As the AVX-512 kernel (iq3_s_avx512.cc), 8 rows at a time: a byte shuffle
// turns each nibble into 16 + its signed value; vpmaddubsw pairs (at most
// 2 * 31 * 127) of four groups add up in int16 before widening.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 134;
constexpr int kScales = 32;
constexpr int kNibbles = 96;

struct IQ3STile : SuperBlockPanel {
  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    alignas(32) int8_t bytes[32];
    for (int i = 0; i < 32; ++i) {
      const int n = i % 16;
      const int value = 2 * (n & 7) + 1;
      bytes[i] = static_cast<int8_t>(n & 8 ? 16 - value : 16 + value);
    }
    const __m256i table = _mm256_load_si256(reinterpret_cast<const __m256i*>(bytes));
    const __m256i nibble = _mm256_set1_epi8(0x0F);
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
        __m256i w[8];
        for (int c = 0; c < 4; ++c) {
          const __m256i v = Load256(pb + kNibbles + 64 * (4 * j + c) + 32 * half);
          w[c] = _mm256_shuffle_epi8(table, _mm256_and_si256(v, nibble));
          w[c + 4] = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), nibble));
        }
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* lv = rows.levels[t] + 256 * sb + 32 * j;
          __m256i sum = _mm256_set1_epi32(-16 * rows.bsum32[t][8 * sb + j]);
          for (int h = 0; h < 2; ++h) {
            __m256i pairs = _mm256_maddubs_epi16(w[4 * h], Broadcast4(lv + 16 * h));
            for (int g = 1; g < 4; ++g) {
              pairs = _mm256_add_epi16(
                  pairs, _mm256_maddubs_epi16(w[4 * h + g], Broadcast4(lv + 16 * h + 4 * g)));
            }
            sum = _mm256_add_epi32(sum, PairSums(pairs));
          }
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_mullo_epi32(sum, odd));
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

void GemmIQ3_S(const PanelGemmArgs& a) { SuperBlockGemm<IQ3STile>(a, kBlockBytes); }

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ3_S, Tier::kAvx2> kIQ3_SAvx2 = {
    .gemm = avx2::GemmIQ3_S,
};

}  // namespace kvmesh::kernels
