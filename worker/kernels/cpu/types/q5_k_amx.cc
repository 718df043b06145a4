// Q5_K with the AMX tile unit: see amx_kquant.h.
#include <cstring>

#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/amx_kquant.h"

namespace kvmesh::kernels::amx {
namespace {

struct Q5KLevels {
  static constexpr size_t kBlockBytes = 16 * 176;
  static constexpr int kMasks = 256;
  static constexpr int kNibbles = 768;

  static void Get(const uint8_t* pb, int c, int g, __m512i level[2]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i sixteen = _mm512_set1_epi8(16);
    const __m512i v = _mm512_loadu_si512(pb + kNibbles + 64 * (8 * c + g));
    const __m512i low[2] = {_mm512_and_si512(v, nibble),
                            _mm512_and_si512(_mm512_srli_epi16(v, 4), nibble)};
    for (int e = 0; e < 2; ++e) {
      __mmask64 fifth;  // the fifth bits of group g of sub-block 2c + e
      std::memcpy(&fifth, pb + kMasks + 8 * (8 * (2 * c + e) + g), 8);
      level[e] = _mm512_mask_add_epi8(low[e], fifth, low[e], sixteen);
    }
  }
};

void GemmQ5_K(const PanelGemmArgs& a) { AmxGemm<AffineK<Q5KLevels>>(a, kQ5_KAvx512.gemm); }

}  // namespace
}  // namespace kvmesh::kernels::amx

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ5_K, Tier::kAmx> kQ5_KAmx = {
    .gemm = amx::GemmQ5_K,
};

}  // namespace kvmesh::kernels
