// Q4_1 on the AVX2 tier: panel GEMM and single-row dot product, both equal to
// the scalar reference bit for bit (see panel_gemm.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {
namespace {

struct Q4_1 {
  static constexpr size_t kBlockBytes = 16 * 20;
  static constexpr bool kAffine = true;
  static constexpr int kCorrectionArray = -1;
  static void Unpack(const uint8_t* pb, int half, __m256i w[8]) { UnpackNibbles(pb + 64, half, w); }
  static __m256i Dot(const __m256i w[8], const int8_t* lv) { return DotUnsigned(w, lv); }
  static __m256 Scales(const uint8_t* pb, int half) { return LoadHalves8(pb + 16 * half); }
  static __m256 Mins(const uint8_t* pb, int half) { return LoadHalves8(pb + 32 + 16 * half); }
};

void GemmQ4_1(const PanelGemmArgs& args) { LegacyGemm<Q4_1>(args, TensorType::kQ8_1); }

float VecDotQ4_1Q8_1(int64_t n, const void* w, const void* x) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const __m256i low = _mm256_set1_epi8(0x0F);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b, wb += 20, xb += 36) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + 4));
    const __m256i levels =
        _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), low);
    const int32_t sumi = ReduceAdd(PairSums(_mm256_maddubs_epi16(levels, Load256(xb + 4))));
    uint16_t dw, mw, dx, sx;
    std::memcpy(&dw, wb, 2);
    std::memcpy(&mw, wb + 2, 2);
    std::memcpy(&dx, xb, 2);
    std::memcpy(&sx, xb + 2, 2);
    sum += static_cast<float>(sumi) * (HalfToFloat(dw) * HalfToFloat(dx)) +
           HalfToFloat(mw) * HalfToFloat(sx);
  }
  return sum;
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ4_1, Tier::kAvx2> kQ4_1Avx2 = {
    .vec_dot = avx2::VecDotQ4_1Q8_1,
    .gemm = avx2::GemmQ4_1,
};

}  // namespace kvmesh::kernels
