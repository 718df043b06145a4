// Q8_K (the activation type of the K quants) on the AVX-512 tier: the
// quantizer, equal to the scalar reference bit for bit.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {
namespace {

void QuantizeRowQ8_K(const float* src, void* dst, int64_t n) {
  constexpr int kChunks = 16;  // vectors of 16 floats per super-block
  uint8_t* out = static_cast<uint8_t*>(dst);
  for (int64_t b = 0; b < n / 256; ++b, src += 256, out += 292) {
    __m512 amax_v = _mm512_setzero_ps();
    for (int c = 0; c < kChunks; ++c) {
      amax_v = _mm512_max_ps(amax_v, _mm512_abs_ps(_mm512_loadu_ps(src + 16 * c)));
    }
    const float amax = _mm512_reduce_max_ps(amax_v);
    if (amax == 0.0f) {
      std::memset(out, 0, 292);
      continue;
    }
    // The signed value of largest magnitude; the first one wins, as in the
    // reference's strict comparison.
    float max = 0.0f;
    for (int c = 0; c < kChunks; ++c) {
      const __m512 v = _mm512_loadu_ps(src + 16 * c);
      const __mmask16 hit = _mm512_cmp_ps_mask(_mm512_abs_ps(v), _mm512_set1_ps(amax), _CMP_EQ_OQ);
      if (hit != 0) {
        max = src[16 * c + __builtin_ctz(hit)];
        break;
      }
    }
    const float inv_scale = -127.0f / max;
    const __m512 scale = _mm512_set1_ps(inv_scale);
    int16_t bsums[16];
    for (int c = 0; c < kChunks; ++c) {
      __m512i q = _mm512_cvtps_epi32(_mm512_mul_ps(scale, _mm512_loadu_ps(src + 16 * c)));
      q = _mm512_min_epi32(q, _mm512_set1_epi32(127));
      // As static_cast<int8_t>: only the int32 a conversion of inf / NaN
      // gives is out of range.
      q = _mm512_srai_epi32(_mm512_slli_epi32(q, 24), 24);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + 4 + 16 * c), _mm512_cvtepi32_epi8(q));
      bsums[c] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    std::memcpy(out + 4 + 256, bsums, sizeof bsums);
    const float d = 1.0f / inv_scale;
    std::memcpy(out, &d, 4);
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ8_K, Tier::kAvx512> kQ8_KAvx512 = {
    .from_float = avx512::QuantizeRowQ8_K,
};

}  // namespace kvmesh::kernels
