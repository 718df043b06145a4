// IQ3_S on the AVX-512 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// The panel holds each value as a nibble (level, sign; panel_layout.h): a
// byte shuffle turns it into 16 + its signed value (unsigned, 1..31),
// vpdpbusd sums a sub-block of 32 against x from -16 times the planar row's
// bsum32 so the sum is exact, and the odd scale 1 + 2 * scale_j multiplies
// it in int32.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 134;
constexpr int kScales = 32;
constexpr int kNibbles = 96;

struct IQ3STile : SuperBlockPanel {
  __m512i table;  // 16 + the signed value of nibble n, in byte n of every 128-bit lane

  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, kBlockBytes);
      const __m512i scales = _mm512_loadu_si512(pb + kScales);
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i odd = _mm512_add_epi32(
            _mm512_slli_epi32(
                _mm512_and_si512(_mm512_srli_epi32(scales, 4 * j), _mm512_set1_epi32(0x0F)), 1),
            _mm512_set1_epi32(1));
        AddNibbleTableSubBlock(pb + kNibbles + 64 * 4 * j, table, 16, rows, sb, j, odd, scaled);
      }
      const __m512 dw = LoadHalves16(pb);
      for (int t = 0; t < kTokens; ++t) {
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(rows.d(t)[sb]));
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

// 16 + (2 * level + 1) for nibbles 0..7, 16 - (2 * level + 1) for 8..15.
__m512i NibbleTable() {
  alignas(64) int8_t bytes[64];
  for (int i = 0; i < 64; ++i) {
    const int n = i % 16;
    const int value = 2 * (n & 7) + 1;
    bytes[i] = static_cast<int8_t>(n & 8 ? 16 - value : 16 + value);
  }
  return _mm512_load_si512(bytes);
}

void GemmIQ3_S(const PanelGemmArgs& a) { SuperBlockGemm<IQ3STile>(a, kBlockBytes, NibbleTable()); }

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ3_S, Tier::kAvx512> kIQ3_SAvx512 = {
    .gemm = avx512::GemmIQ3_S,
};

}  // namespace kvmesh::kernels
