// Q8_K (the activation type of the K quants) on the AVX2 tier: the quantizer,
// equal to the scalar reference bit for bit.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {
namespace {

void QuantizeRowQ8_K(const float* src, void* dst, int64_t n) {
  constexpr int kChunks = 32;  // vectors of 8 floats per super-block
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 256; ++b, src += 256, out += 292) {
    __m256 amax_v = _mm256_setzero_ps();
    for (int c = 0; c < kChunks; ++c)
      amax_v = _mm256_max_ps(amax_v, Abs(_mm256_loadu_ps(src + 8 * c)));
    const float amax = ReduceMax(amax_v);
    if (amax == 0.0f) {
      std::memset(out, 0, 292);
      continue;
    }
    // The signed value of largest magnitude; the first one wins.
    float max = 0.0f;
    for (int c = 0; c < kChunks; ++c) {
      const __m256 hit =
          _mm256_cmp_ps(Abs(_mm256_loadu_ps(src + 8 * c)), _mm256_set1_ps(amax), _CMP_EQ_OQ);
      const int bits = _mm256_movemask_ps(hit);
      if (bits != 0) {
        max = src[8 * c + __builtin_ctz(static_cast<unsigned>(bits))];
        break;
      }
    }
    const float inv_scale = -127.0f / max;
    const __m256 scale = _mm256_set1_ps(inv_scale);
    int16_t bsums[16];
    for (int g = 0; g < 16; ++g) {
      __m256i sum = _mm256_setzero_si256();
      for (int h = 0; h < 2; ++h) {
        const int c = 2 * g + h;
        __m256i q = _mm256_cvtps_epi32(_mm256_mul_ps(scale, _mm256_loadu_ps(src + 8 * c)));
        q = TruncateToInt8(_mm256_min_epi32(q, _mm256_set1_epi32(127)));
        sum = _mm256_add_epi32(sum, q);
        const int64_t packed = PackInt8(q);
        std::memcpy(out + 4 + 8 * c, &packed, 8);
      }
      bsums[g] = static_cast<int16_t>(ReduceAdd(sum));
    }
    std::memcpy(out + 4 + 256, bsums, sizeof bsums);
    const float d = 1.0f / inv_scale;
    std::memcpy(out, &d, 4);
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ8_K, Tier::kAvx2> kQ8_KAvx2 = {
    .from_float = avx2::QuantizeRowQ8_K,
};

}  // namespace kvmesh::kernels
