// IQ2_XS on the AVX-512 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// Each group of 8 values of the 16 rows is one 16-bit word: its 9-bit point
// index is gathered from the codebook as two 4-byte halves, and its 7-bit
// sign code becomes 8 sign bits (parity as the eighth). The bytes are signed
// around 64 and summed by vpdpbusd from -64 times the planar row's bsum16,
// and the odd scale 2 * scale_r + 1 of each run of 16 multiplies its sum in
// int32. The super-scale enters as d / 8.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 74;
constexpr int kWords = 32;
constexpr int kScales = kWords + 16 * 64;
constexpr int kOffset = 64;

struct IQ2XSTile : SuperBlockPanel {
  LaneByteSpread spread;

  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const int* grid = reinterpret_cast<const int*>(kIq2xsGrid.data());
    const __m512i index_mask = _mm512_set1_epi32(511);
    const __m512i code_mask = _mm512_set1_epi32(127);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, kBlockBytes);
      const __m512i scales[2] = {_mm512_loadu_si512(pb + kScales),
                                 _mm512_loadu_si512(pb + kScales + 64)};
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
      for (int r = 0; r < 16; ++r) {  // runs of 16: groups 2r, 2r + 1
        const __m512i odd = _mm512_add_epi32(
            _mm512_slli_epi32(_mm512_and_si512(_mm512_srli_epi32(scales[r / 8], 4 * (r % 8)),
                                               _mm512_set1_epi32(0x0F)),
                              1),
            _mm512_set1_epi32(1));
        const __m512i words = _mm512_loadu_si512(pb + kWords + 64 * r);
        __m512i part[kTokens];
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm512_set1_epi32(-kOffset * rows.bsum16(t)[16 * sb + r]);
        }
#pragma GCC unroll 2
        for (int g = 0; g < 2; ++g) {
          const __m512i word = _mm512_srli_epi32(words, 16 * g);
          const __m512i index = _mm512_and_si512(word, index_mask);
          const __m512i signs = GridSigns8(_mm512_and_si512(_mm512_srli_epi32(word, 9), code_mask));
          for (int h = 0; h < 2; ++h) {
            const __m512i magnitudes = _mm512_i32gather_epi32(index, grid + h, 8);
            const __m512i w = OffsetSigned(magnitudes, GridSignMask(signs, spread, h), kOffset);
#pragma GCC unroll 16
            for (int t = 0; t < kTokens; ++t) {
              const int8_t* lv = rows.levels(t) + 256 * sb + 16 * r + 8 * g + 4 * h;
              part[t] = _mm512_dpbusd_epi32(part[t], w, Broadcast4(lv));
            }
          }
        }
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
          scaled[t] = _mm512_add_epi32(scaled[t], _mm512_mullo_epi32(part[t], odd));
        }
      }
      const __m512 dw = _mm512_mul_ps(LoadHalves16(pb), _mm512_set1_ps(0.125f));
      for (int t = 0; t < kTokens; ++t) {
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(rows.d(t)[sb]));
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

void GemmIQ2_XS(const PanelGemmArgs& a) {
  SuperBlockGemm<IQ2XSTile>(a, kBlockBytes, LaneByteSpread());
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ2_XS, Tier::kAvx512> kIQ2_XSAvx512 = {
    .gemm = avx512::GemmIQ2_XS,
};

}  // namespace kvmesh::kernels
