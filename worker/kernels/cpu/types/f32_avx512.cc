// F32 on the AVX-512 tier: panel GEMM and single-row dot product
// (float lanes with fused multiply-adds; see avx512_float.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_float.h"

namespace kvmesh::kernels::avx512 {
namespace {

struct F32 {
  static constexpr size_t kStepBytes = 64;
  static constexpr int kStepElems = 1;
  static constexpr size_t kXBytes = 4;
  static __m512 Load(const uint8_t* p) { return _mm512_loadu_ps(p); }
  static __m512 Accumulate(__m512 acc, __m512 w, const uint8_t* xp) {
    return _mm512_fmadd_ps(w, _mm512_set1_ps(LoadF32(xp)), acc);
  }
};

void GemmF32(const PanelGemmArgs& args) { FloatGemm<F32>(args); }

float VecDotF32(int64_t n, const void* w, const void* x) {
  const float* wf = static_cast<const float*>(w);
  const float* xf = static_cast<const float*>(x);
  return DotFloatLanes(n, [&](int64_t i, __mmask16 m, __m512* wv, __m512* xv) {
    *wv = _mm512_maskz_loadu_ps(m, wf + i);
    *xv = _mm512_maskz_loadu_ps(m, xf + i);
  });
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kF32, Tier::kAvx512> kF32Avx512 = {
    .vec_dot = avx512::VecDotF32,
    .gemm = avx512::GemmF32,
};

}  // namespace kvmesh::kernels
