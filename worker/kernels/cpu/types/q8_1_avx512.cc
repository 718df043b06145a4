// Q8_1 (the activation type of Q4_1 / Q5_1) on the AVX-512 tier: the
// quantizer, equal to the scalar reference bit for bit.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {
namespace {

void QuantizeRowQ8_1(const float* src, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 32; ++b, src += 32, out += 36) {
    const __m512 x0 = _mm512_loadu_ps(src);
    const __m512 x1 = _mm512_loadu_ps(src + 16);
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(x0), _mm512_abs_ps(x1)));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    const __m512 scale = _mm512_set1_ps(inv_d);
    const __m512i q0 = _mm512_cvttps_epi32(RoundHalfAway(_mm512_mul_ps(x0, scale)));
    const __m512i q1 = _mm512_cvttps_epi32(RoundHalfAway(_mm512_mul_ps(x1, scale)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4), _mm512_cvtepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 20), _mm512_cvtepi32_epi8(q1));
    const int32_t level_sum = _mm512_reduce_add_epi32(_mm512_add_epi32(q0, q1));
    const uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    const uint16_t sh = _cvtss_sh(static_cast<float>(level_sum) * d, _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(out, &dh, 2);
    std::memcpy(out + 2, &sh, 2);
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ8_1, Tier::kAvx512> kQ8_1Avx512 = {
    .from_float = avx512::QuantizeRowQ8_1,
};

}  // namespace kvmesh::kernels
