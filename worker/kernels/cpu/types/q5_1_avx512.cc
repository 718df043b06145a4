// Q5_1 on the AVX-512 tier: panel GEMM and single-row dot product, both equal
// to the scalar reference bit for bit (see panel_gemm.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {
namespace {

struct Q5_1 {
  static constexpr size_t kBlockBytes = 16 * 24;
  static constexpr bool kAffine = true;
  static constexpr int kCorrectionArray = 0;
  static void Unpack(const uint8_t* pb, __m512i w[8]) {
    UnpackNibbles(pb + 128, w);
    AddHighBits(pb + 64, w);
  }
  static __m512 Scales(const uint8_t* pb) { return LoadHalves16(pb); }
  static __m512 Mins(const uint8_t* pb) { return LoadHalves16(pb + 32); }
};

void GemmQ5_1(const PanelGemmArgs& args) { LegacyGemm<Q5_1>(args, TensorType::kQ8_1); }

float VecDotQ5_1Q8_1(int64_t n, const void* w, const void* x) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);  // blocks of 24 bytes
  const uint8_t* xb = static_cast<const uint8_t*>(x);  // blocks of 36 bytes
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i sixteen = _mm256_set1_epi8(16);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b, wb += 24, xb += 36) {
    const __m128i packed = _mm_loadu_si128(reinterpret_cast<const __m128i*>(wb + 8));
    __m256i levels = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(packed, 4), packed), low);
    levels = _mm256_mask_add_epi8(levels, _cvtu32_mask32(static_cast<uint32_t>(LoadI32(wb + 4))),
                                  levels, sixteen);
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + 4));
    const int32_t sumi = ReduceAdd(_mm256_dpbusd_epi32(_mm256_setzero_si256(), levels, xq));
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
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ5_1, Tier::kAvx512> kQ5_1Avx512 = {
    .vec_dot = avx512::VecDotQ5_1Q8_1,
    .gemm = avx512::GemmQ5_1,
};

}  // namespace kvmesh::kernels
