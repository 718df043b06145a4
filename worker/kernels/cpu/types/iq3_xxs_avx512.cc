// IQ3_XXS on the AVX-512 tier: panel GEMM equal to the scalar reference bit
// for bit (see panel_gemm.h).
//
// As IQ3_S's (iq3_s_avx512.cc): each group of 4 values of the 16 rows is
// gathered from the 256-point codebook, signed around 64 and summed by
// vpdpbusd from -64 times bsum32; a sub-block's four 7-bit sign codes become
// its 32 sign bits (parity as the eighth of each 8), and the odd scale
// 2 * scale_j + 1 multiplies its sum in int32. The super-scale enters as
// d / 4.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 98;
constexpr int kIndices = 32;
constexpr int kWords = kIndices + 16 * 64;
constexpr int kOffset = 64;

struct IQ3XXSTile : SuperBlockPanel {
  LaneByteSpread spread;

  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const int* grid = reinterpret_cast<const int*>(kIq3xxsGrid.data());
    const __m512i byte_mask = _mm512_set1_epi32(0xFF);
    const __m512i code_mask = _mm512_set1_epi32(127);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, kBlockBytes);
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
      for (int j = 0; j < 8; ++j) {
        const __m512i word = _mm512_loadu_si512(pb + kWords + 64 * j);
        const __m512i odd = _mm512_add_epi32(_mm512_slli_epi32(_mm512_srli_epi32(word, 28), 1),
                                             _mm512_set1_epi32(1));
        __m512i signs = GridSigns8(_mm512_and_si512(word, code_mask));
        for (int p = 1; p < 4; ++p) {
          const __m512i codes = _mm512_and_si512(_mm512_srli_epi32(word, 7 * p), code_mask);
          signs = _mm512_or_si512(signs, _mm512_slli_epi32(GridSigns8(codes), 8 * p));
        }
        const __m512i indices[2] = {_mm512_loadu_si512(pb + kIndices + 64 * (2 * j)),
                                    _mm512_loadu_si512(pb + kIndices + 64 * (2 * j + 1))};
        __m512i part[kTokens];
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm512_set1_epi32(-kOffset * rows.bsum32(t)[8 * sb + j]);
        }
#pragma GCC unroll 8
        for (int l = 0; l < 8; ++l) {
          const __m512i index =
              _mm512_and_si512(_mm512_srli_epi32(indices[l / 4], 8 * (l % 4)), byte_mask);
          const __m512i magnitudes = _mm512_i32gather_epi32(index, grid, 4);
          const __m512i w = OffsetSigned(magnitudes, GridSignMask(signs, spread, l), kOffset);
#pragma GCC unroll 16
          for (int t = 0; t < kTokens; ++t) {
            const int8_t* lv = rows.levels(t) + 256 * sb + 32 * j;
            part[t] = _mm512_dpbusd_epi32(part[t], w, Broadcast4(lv + 4 * l));
          }
        }
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
          scaled[t] = _mm512_add_epi32(scaled[t], _mm512_mullo_epi32(part[t], odd));
        }
      }
      const __m512 dw = _mm512_mul_ps(LoadHalves16(pb), _mm512_set1_ps(0.25f));
      for (int t = 0; t < kTokens; ++t) {
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(rows.d(t)[sb]));
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

void GemmIQ3_XXS(const PanelGemmArgs& a) {
  SuperBlockGemm<IQ3XXSTile>(a, kBlockBytes, LaneByteSpread());
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ3_XXS, Tier::kAvx512> kIQ3_XXSAvx512 = {
    .gemm = avx512::GemmIQ3_XXS,
};

}  // namespace kvmesh::kernels
