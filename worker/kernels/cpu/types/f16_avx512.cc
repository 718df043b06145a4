// F16 on the AVX-512 tier: panel GEMM, single-row dot product (float lanes
// with fused multiply-adds; see avx512_float.h) and the exact conversions.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_float.h"

namespace kvmesh::kernels::avx512 {
namespace {

struct F16 {
  static constexpr size_t kStepBytes = 32;
  static constexpr int kStepElems = 1;
  static constexpr size_t kXBytes = 4;  // planar F16 activations are floats
  static __m512 Load(const uint8_t* p) { return LoadHalves16(p); }
  static __m512 Accumulate(__m512 acc, __m512 w, const uint8_t* xp) {
    return _mm512_fmadd_ps(w, _mm512_set1_ps(LoadF32(xp)), acc);
  }
};

__m512 LoadHalvesMasked(const uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}

void GemmF16(const PanelGemmArgs& args) { FloatGemm<F16>(args); }

float VecDotF16(int64_t n, const void* w, const void* x) {
  const uint16_t* wh = static_cast<const uint16_t*>(w);
  const uint16_t* xh = static_cast<const uint16_t*>(x);
  return DotFloatLanes(n, [&](int64_t i, __mmask16 m, __m512* wv, __m512* xv) {
    *wv = LoadHalvesMasked(wh + i, m);
    *xv = LoadHalvesMasked(xh + i, m);
  });
}

void QuantizeRowF16(const float* src, void* dst, int64_t n) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, src + i), _MM_FROUND_TO_NEAREST_INT);
    _mm256_mask_storeu_epi16(out + i, m, h);
  }
}

void DequantizeRowF16(const void* src, float* dst, int64_t n) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    _mm512_mask_storeu_ps(dst + i, m, LoadHalvesMasked(in + i, m));
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kF16, Tier::kAvx512> kF16Avx512 = {
    .to_float = avx512::DequantizeRowF16,
    .from_float = avx512::QuantizeRowF16,
    .vec_dot = avx512::VecDotF16,
    .gemm = avx512::GemmF16,
};

}  // namespace kvmesh::kernels
