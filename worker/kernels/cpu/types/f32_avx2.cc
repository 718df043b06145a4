// F32 on the AVX2 tier: panel GEMM and single-row dot product (float lanes
// with fused multiply-adds; see avx2_float.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_float.h"

namespace kvmesh::kernels::avx2 {
namespace {

struct F32 {
  static constexpr size_t kStepBytes = 64;
  static constexpr int kStepElems = 1;
  static constexpr size_t kXBytes = 4;
  static __m256 Load(const uint8_t* p, int half) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(p + 32 * half));
  }
  static __m256 Accumulate(__m256 acc, __m256 w, const uint8_t* xp) {
    return _mm256_fmadd_ps(w, _mm256_set1_ps(LoadF32(xp)), acc);
  }
};

__m256 LoadFloats(const float* p, int count) {
  if (count == 8) return _mm256_loadu_ps(p);
  alignas(32) uint8_t buffer[32];
  CopyTail(p, count, 4, buffer);
  return _mm256_load_ps(reinterpret_cast<const float*>(buffer));
}

void GemmF32(const PanelGemmArgs& args) { FloatGemm<F32>(args); }

float VecDotF32(int64_t n, const void* w, const void* x) {
  const float* wf = static_cast<const float*>(w);
  const float* xf = static_cast<const float*>(x);
  return DotFloatLanes(n, [&](int64_t i, int count, __m256* wv, __m256* xv) {
    *wv = LoadFloats(wf + i, count);
    *xv = LoadFloats(xf + i, count);
  });
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kF32, Tier::kAvx2> kF32Avx2 = {
    .vec_dot = avx2::VecDotF32,
    .gemm = avx2::GemmF32,
};

}  // namespace kvmesh::kernels
