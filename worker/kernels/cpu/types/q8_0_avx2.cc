// Q8_0 on the AVX2 tier: panel GEMM, single-row dot product and the
// activation quantizer, each equal to the scalar reference bit for bit.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {
namespace {

// |w| * (x with w's sign) in int16 pairs: |pair| <= 2 * 127 * 127 < 2^15.
inline __m256i SignedPairs(__m256i w, __m256i x) {
  return _mm256_maddubs_epi16(_mm256_abs_epi8(w), _mm256_sign_epi8(x, w));
}

struct Q8_0 {
  static constexpr size_t kBlockBytes = 16 * 34;
  static constexpr bool kAffine = false;
  static constexpr int kCorrectionArray = -1;  // Dot works on the signed levels
  static void Unpack(const uint8_t* pb, int half, __m256i w[8]) {
    const __m256i flip = _mm256_set1_epi8(static_cast<char>(0x80));
    for (int g = 0; g < 8; ++g)
      w[g] = _mm256_xor_si256(Load256(pb + 32 + 64 * g + 32 * half), flip);
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

void GemmQ8_0(const PanelGemmArgs& args) { LegacyGemm<Q8_0>(args, TensorType::kQ8_0); }

float VecDotQ8_0Q8_0(int64_t n, const void* w, const void* x) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b, wb += 34, xb += 34) {
    const int32_t sumi = ReduceAdd(PairSums(SignedPairs(Load256(wb + 2), Load256(xb + 2))));
    uint16_t dw, dx;
    std::memcpy(&dw, wb, 2);
    std::memcpy(&dx, xb, 2);
    sum += static_cast<float>(sumi) * (HalfToFloat(dw) * HalfToFloat(dx));
  }
  return sum;
}

void QuantizeRowQ8_0(const float* src, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 32; ++b, src += 32, out += 34) {
    __m256 x[4];
    __m256 amax_v = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      x[i] = _mm256_loadu_ps(src + 8 * i);
      amax_v = _mm256_max_ps(amax_v, Abs(x[i]));
    }
    const float amax = ReduceMax(amax_v);
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(out, &dh, 2);
    const __m256 scale = _mm256_set1_ps(inv_d);
    for (int i = 0; i < 4; ++i) {
      const int64_t q = PackInt8(_mm256_cvttps_epi32(RoundHalfAway(_mm256_mul_ps(x[i], scale))));
      std::memcpy(out + 2 + 8 * i, &q, 8);
    }
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ8_0, Tier::kAvx2> kQ8_0Avx2 = {
    .from_float = avx2::QuantizeRowQ8_0,
    .vec_dot = avx2::VecDotQ8_0Q8_0,
    .gemm = avx2::GemmQ8_0,
};

}  // namespace kvmesh::kernels
