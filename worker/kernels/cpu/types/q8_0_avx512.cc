// Q8_0 on the AVX-512 tier: panel GEMM, single-row dot product and the
// activation quantizer, each equal to the scalar reference bit for bit.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {
namespace {

struct Q8_0 {
  static constexpr size_t kBlockBytes = 16 * 34;
  static constexpr bool kAffine = false;
  static constexpr int kCorrectionArray = 2;  // levels are stored + 128: -128 * sum(x)
  static void Unpack(const uint8_t* pb, __m512i w[8]) {
    for (int g = 0; g < 8; ++g) w[g] = _mm512_loadu_si512(pb + 32 + 64 * g);
  }
  static __m512 Scales(const uint8_t* pb) { return LoadHalves16(pb); }
  static __m512 Mins(const uint8_t*) { return _mm512_setzero_ps(); }
};

void GemmQ8_0(const PanelGemmArgs& args) { LegacyGemm<Q8_0>(args, TensorType::kQ8_0); }

float VecDotQ8_0Q8_0(int64_t n, const void* w, const void* x) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 32; ++b, wb += 34, xb += 34) {
    const __m256i wq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(wb + 2));
    const __m256i xq = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xb + 2));
    // |w| * (x with w's sign): the unsigned-by-signed product VNNI offers.
    const __m256i dot =
        _mm256_dpbusd_epi32(_mm256_setzero_si256(), _mm256_abs_epi8(wq), _mm256_sign_epi8(xq, wq));
    const int32_t sumi = ReduceAdd(dot);
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
    const __m512 x0 = _mm512_loadu_ps(src);
    const __m512 x1 = _mm512_loadu_ps(src + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(out, &dh, 2);
    const __m512 scale = _mm512_set1_ps(inv_d);
    const __m512i q0 = _mm512_cvttps_epi32(RoundHalfAway(_mm512_mul_ps(x0, scale)));
    const __m512i q1 = _mm512_cvttps_epi32(RoundHalfAway(_mm512_mul_ps(x1, scale)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 2), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 18), _mm512_cvtepi32_epi8(q1));
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ8_0, Tier::kAvx512> kQ8_0Avx512 = {
    .from_float = avx512::QuantizeRowQ8_0,
    .vec_dot = avx512::VecDotQ8_0Q8_0,
    .gemm = avx512::GemmQ8_0,
};

}  // namespace kvmesh::kernels
