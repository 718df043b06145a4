// Q4_K with the AMX tile unit: see amx_kquant.h.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/amx_kquant.h"

namespace kvmesh::kernels::amx {
namespace {

struct Q4KLevels {
  static constexpr size_t kBlockBytes = 16 * 144;
  static constexpr int kNibbles = 256;

  static void Get(const uint8_t* pb, int c, int g, __m512i level[2]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i v = _mm512_loadu_si512(pb + kNibbles + 64 * (8 * c + g));
    level[0] = _mm512_and_si512(v, nibble);
    level[1] = _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble);
  }
};

void GemmQ4_K(const PanelGemmArgs& a) { AmxGemm<AffineK<Q4KLevels>>(a, kQ4_KAvx512.gemm); }

}  // namespace
}  // namespace kvmesh::kernels::amx

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ4_K, Tier::kAmx> kQ4_KAmx = {
    .gemm = amx::GemmQ4_K,
};

}  // namespace kvmesh::kernels
