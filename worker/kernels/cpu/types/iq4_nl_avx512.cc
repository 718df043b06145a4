// IQ4_NL on the AVX-512 tier: panel GEMM equal to the scalar reference bit
// for bit (see panel_gemm.h). The panel is Q4_0's with codes for levels; a
// byte shuffle turns each code into its value + 128 (unsigned, as Q8_0's
// panels store levels), and the planar row's -128 * sum(x) takes the 128 off.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {
namespace {

struct IQ4_NL {
  static constexpr size_t kBlockBytes = 16 * 18;
  static constexpr bool kAffine = false;
  static constexpr int kCorrectionArray = 2;  // values are taken + 128: -128 * sum(x)
  static void Unpack(const uint8_t* pb, __m512i w[8]) {
    const __m512i table = _mm512_load_si512(kIq4Bytes.bytes);
    UnpackNibbles(pb + 32, w);
    for (int g = 0; g < 8; ++g) w[g] = _mm512_shuffle_epi8(table, w[g]);
  }
  static __m512 Scales(const uint8_t* pb) { return LoadHalves16(pb); }
  static __m512 Mins(const uint8_t*) { return _mm512_setzero_ps(); }
};

void GemmIQ4_NL(const PanelGemmArgs& args) { LegacyGemm<IQ4_NL>(args, TensorType::kQ8_0); }

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ4_NL, Tier::kAvx512> kIQ4_NLAvx512 = {
    .gemm = avx512::GemmIQ4_NL,
};

}  // namespace kvmesh::kernels
