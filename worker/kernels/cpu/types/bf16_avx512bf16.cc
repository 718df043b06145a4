// BF16 panel GEMM with the AVX512_BF16 dot-product instruction (vdpbf16ps):
// 32 multiply-adds per instruction, one element pair per step. Called only
// when HasAvx512Bf16(); bf16_avx512.cc is the same computation without it.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_float.h"

namespace kvmesh::kernels::avx512 {
namespace {

struct Bf16Native {
  static constexpr size_t kStepBytes = 64;
  static constexpr int kStepElems = 2;
  static constexpr size_t kXBytes = 4;
  static __m512bh Load(const uint8_t* p) { return (__m512bh)_mm512_loadu_si512(p); }
  static __m512 Accumulate(__m512 acc, __m512bh w, const uint8_t* xp) {
    return _mm512_dpbf16_ps(acc, w, (__m512bh)_mm512_set1_epi32(LoadI32(xp)));
  }
};

void GemmBf16Native(const PanelGemmArgs& args) { FloatGemm<Bf16Native>(args); }

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kBF16, Tier::kAvx512Bf16> kBF16Avx512Bf16 = {
    .gemm = avx512::GemmBf16Native,
};

}  // namespace kvmesh::kernels
