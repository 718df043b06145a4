// Q5_0 with the AMX tile unit: see amx_legacy.h.
#include "worker/kernels/cpu/simd/amx_legacy.h"
#include "worker/kernels/cpu/simd_kernels.h"

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

}  // namespace

void GemmQ5_0(const PanelGemmArgs& a) { AmxGemm<Legacy<Q5_0Levels>>(a, avx512::GemmQ5_0); }

}  // namespace kvmesh::kernels::amx
