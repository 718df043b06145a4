// F16 on the AVX2 tier: panel GEMM, single-row dot product (float lanes with
// fused multiply-adds; see avx2_float.h) and the exact conversions.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_float.h"

namespace kvmesh::kernels::avx2 {
namespace {

struct F16 {
  static constexpr size_t kStepBytes = 32;
  static constexpr int kStepElems = 1;
  static constexpr size_t kXBytes = 4;
  static __m256 Load(const uint8_t* p, int half) { return LoadHalves8(p + 16 * half); }
  static __m256 Accumulate(__m256 acc, __m256 w, const uint8_t* xp) {
    return _mm256_fmadd_ps(w, _mm256_set1_ps(LoadF32(xp)), acc);
  }
};

__m256 LoadHalves(const uint16_t* p, int count) {
  if (count == 8) return LoadHalves8(p);
  alignas(32) uint8_t buffer[32];
  CopyTail(p, count, 2, buffer);
  return LoadHalves8(buffer);
}

void GemmF16(const PanelGemmArgs& args) { FloatGemm<F16>(args); }

float VecDotF16(int64_t n, const void* w, const void* x) {
  const uint16_t* wh = static_cast<const uint16_t*>(w);
  const uint16_t* xh = static_cast<const uint16_t*>(x);
  return DotFloatLanes(n, [&](int64_t i, int count, __m256* wv, __m256* xv) {
    *wv = LoadHalves(wh + i, count);
    *xv = LoadHalves(xh + i, count);
  });
}

void QuantizeRowF16(const float* src, void* dst, int64_t n) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
  }
  for (; i < n; ++i) out[i] = _cvtss_sh(src[i], _MM_FROUND_TO_NEAREST_INT);
}

void DequantizeRowF16(const void* src, float* dst, int64_t n) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LoadHalves8(in + i));
  for (; i < n; ++i) dst[i] = _cvtsh_ss(in[i]);
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kF16, Tier::kAvx2> kF16Avx2 = {
    .to_float = avx2::DequantizeRowF16,
    .from_float = avx2::QuantizeRowF16,
    .vec_dot = avx2::VecDotF16,
    .gemm = avx2::GemmF16,
};

}  // namespace kvmesh::kernels
