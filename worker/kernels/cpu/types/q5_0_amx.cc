// Q5_0 with the AMX tile unit: see amx_legacy.h.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/amx_legacy.h"

namespace kvmesh::kernels::amx {
namespace {

struct Q5_0Levels {
  static constexpr size_t kBlockBytes = 16 * 22;
  static constexpr int kOffset = 16;
  static void Unpack(const uint8_t* pb, __m512i w[8]) {
    avx512::UnpackNibbles(pb + 96, w);
    avx512::AddHighBits(pb + 32, w);
  }
};

void GemmQ5_0(const PanelGemmArgs& a) { AmxGemm<Legacy<Q5_0Levels>>(a, kQ5_0Avx512.gemm); }

}  // namespace
}  // namespace kvmesh::kernels::amx

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ5_0, Tier::kAmx> kQ5_0Amx = {
    .gemm = amx::GemmQ5_0,
};

}  // namespace kvmesh::kernels
