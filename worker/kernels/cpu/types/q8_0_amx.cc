// Q8_0 with the AMX tile unit: see amx_legacy.h.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/amx_legacy.h"

namespace kvmesh::kernels::amx {
namespace {

struct Q8_0Levels {
  static constexpr size_t kBlockBytes = 16 * 34;
  static constexpr int kOffset = 128;  // stored as level ^ 0x80, i.e. level + 128
  static void Unpack(const uint8_t* pb, __m512i w[8]) {
    for (int g = 0; g < 8; ++g) w[g] = _mm512_loadu_si512(pb + 32 + 64 * g);
  }
};

void GemmQ8_0(const PanelGemmArgs& a) { AmxGemm<Legacy<Q8_0Levels>>(a, kQ8_0Avx512.gemm); }

}  // namespace
}  // namespace kvmesh::kernels::amx

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ8_0, Tier::kAmx> kQ8_0Amx = {
    .gemm = amx::GemmQ8_0,
};

}  // namespace kvmesh::kernels
