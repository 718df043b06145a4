// Q8_1 (the activation type of Q4_1 / Q5_1) on the AVX2 tier: the quantizer,
// equal to the scalar reference bit for bit.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {
namespace {

void QuantizeRowQ8_1(const float* src, void* dst, int64_t n) {
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 32; ++b, src += 32, out += 36) {
    __m256 x[4];
    __m256 amax_v = _mm256_setzero_ps();
    for (int i = 0; i < 4; ++i) {
      x[i] = _mm256_loadu_ps(src + 8 * i);
      amax_v = _mm256_max_ps(amax_v, Abs(x[i]));
    }
    const float amax = ReduceMax(amax_v);
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    const __m256 scale = _mm256_set1_ps(inv_d);
    __m256i level_sum = _mm256_setzero_si256();
    for (int i = 0; i < 4; ++i) {
      const __m256i q = _mm256_cvttps_epi32(RoundHalfAway(_mm256_mul_ps(x[i], scale)));
      level_sum = _mm256_add_epi32(level_sum, q);
      const int64_t packed = PackInt8(q);
      std::memcpy(out + 4 + 8 * i, &packed, 8);
    }
    const uint16_t dh = _cvtss_sh(d, _MM_FROUND_TO_NEAREST_INT);
    const uint16_t sh =
        _cvtss_sh(static_cast<float>(ReduceAdd(level_sum)) * d, _MM_FROUND_TO_NEAREST_INT);
    std::memcpy(out, &dh, 2);
    std::memcpy(out + 2, &sh, 2);
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ8_1, Tier::kAvx2> kQ8_1Avx2 = {
    .from_float = avx2::QuantizeRowQ8_1,
};

}  // namespace kvmesh::kernels
