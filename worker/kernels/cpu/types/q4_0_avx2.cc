// Q4_0 on the AVX2 tier: panel GEMM and single-row dot product, both equal to
// the scalar reference bit for bit (see panel_gemm.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {
namespace {

struct Q4_0 {
  static constexpr size_t kBlockBytes = 16 * 18;
  static constexpr bool kAffine = false;
  static constexpr int kCorrectionArray = 0;
  static void Unpack(const uint8_t* pb, int half, __m256i w[8]) { UnpackNibbles(pb + 32, half, w); }
  static __m256i Dot(const __m256i w[8], const int8_t* lv) { return DotUnsigned(w, lv); }
  static __m256 Scales(const uint8_t* pb, int half) { return LoadHalves8(pb + 16 * half); }
  static __m256 Mins(const uint8_t*, int) { return _mm256_setzero_ps(); }
};

void GemmQ4_0(const PanelGemmArgs& args) { LegacyGemm<Q4_0>(args, TensorType::kQ8_0); }

float VecDotQ4_0Q8_0(int64_t n, const void* w, const void* x) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i eight = _mm256_set1_epi8(8);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b, wb += 18, xb += 34) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + 2));
    const __m256i levels =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), low);
    const __m256i xq = Load256(xb + 2);
    // (level - 8) * x in int16 pairs: |pair| <= 2 * 8 * 127.
    const __m256i signed_levels = _mm256_sub_epi8(levels, eight);
    const __m256i pairs =
        _mm256_maddubs_epi16(_mm256_abs_epi8(signed_levels), _mm256_sign_epi8(xq, signed_levels));
    const int32_t sumi = ReduceAdd(PairSums(pairs));
    uint16_t dw, dx;
    std::memcpy(&dw, wb, 2);
    std::memcpy(&dx, xb, 2);
    sum += static_cast<float>(sumi) * (HalfToFloat(dw) * HalfToFloat(dx));
  }
  return sum;
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ4_0, Tier::kAvx2> kQ4_0Avx2 = {
    .vec_dot = avx2::VecDotQ4_0Q8_0,
    .gemm = avx2::GemmQ4_0,
};

}  // namespace kvmesh::kernels
