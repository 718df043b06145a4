// IQ4_NL on the AVX2 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h). The panel is Q4_0's with codes for levels; a byte
// shuffle turns each code into its signed value, and the block sum is Q8_0's
// signed one (|value| <= 127, so vpmaddubsw pairs cannot saturate).
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {
namespace {

inline __m256i SignedPairs(__m256i w, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
}

struct IQ4_NL {
  static constexpr size_t kBlockBytes = 16 * 18;
  static constexpr bool kAffine = false;
  static constexpr int kCorrectionArray = -1;  // Dot works on the signed values
  static void Unpack(const uint8_t* pb, int half, __m256i w[8]) {
    const __m256i table =
        _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(kIq4Values)));
    UnpackNibbles(pb + 32, half, w);
    for (int g = 0; g < 8; ++g) w[g] = _mm256_shuffle_epi8(table, w[g]);
  }
  static __m256i Dot(const __m256i w[8], const int8_t* lv) {
    __m256i sum = PairSums(SignedPairs(w[0], Broadcast4(lv)));
    for (int g = 1; g < 8; ++g) {
      sum = _mm256_add_epi32(sum, PairSums(SignedPairs(w[g], Broadcast4(lv + 4 * g))));
    }
    return sum;
  }
  static __m256 Scales(const uint8_t* pb, int half) { return LoadHalves8(pb + 16 * half); }
  static __m256 Mins(const uint8_t*, int) { return _mm256_setzero_ps(); }
};

void GemmIQ4_NL(const PanelGemmArgs& args) { LegacyGemm<IQ4_NL>(args, TensorType::kQ8_0); }

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ4_NL, Tier::kAvx2> kIQ4_NLAvx2 = {
    .gemm = avx2::GemmIQ4_NL,
};

}  // namespace kvmesh::kernels
