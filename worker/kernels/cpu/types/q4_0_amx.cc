// Q4_0 with the AMX tile unit: see amx_legacy.h.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/amx_legacy.h"

namespace kvmesh::kernels::amx {
namespace {

struct Q4_0Levels {
  static constexpr size_t kBlockBytes = 16 * 18;
  static constexpr int kOffset = 8;
  static void Unpack(const uint8_t* pb, __m512i w[8]) { avx512::UnpackNibbles(pb + 32, w); }
};

void GemmQ4_0(const PanelGemmArgs& a) { AmxGemm<Legacy<Q4_0Levels>>(a, kQ4_0Avx512.gemm); }

}  // namespace
}  // namespace kvmesh::kernels::amx

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ4_0, Tier::kAmx> kQ4_0Amx = {
    .gemm = amx::GemmQ4_0,
};

}  // namespace kvmesh::kernels
