// Q4_K with the AMX tile unit: see amx_kquant.h.
#include "worker/kernels/cpu/simd/amx_kquant.h"
#include "worker/kernels/cpu/simd_kernels.h"

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

}  // namespace

void GemmQ4_K(const PanelGemmArgs& a) { AmxGemm<AffineK<Q4KLevels>>(a, avx512::GemmQ4_K); }

}  // namespace kvmesh::kernels::amx
