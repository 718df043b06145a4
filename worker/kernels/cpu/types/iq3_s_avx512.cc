// IQ3_S on the AVX-512 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// Each group of 4 values of the 16 rows is gathered from the codebook as
// bytes, signed around 16 (16 +- value, unsigned) and summed against x by
// vpdpbusd, starting from -16 times the planar row's bsum32 so the sub-block
// sum is exact; the odd scale 1 + 2 * scale_j multiplies it in int32.
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 110;
constexpr int kQs = 32;
constexpr int kQh = kQs + 16 * 64;
constexpr int kSigns = kQh + 2 * 64;
constexpr int kScales = kSigns + 8 * 64;
constexpr int kOffset = 16;

struct IQ3STile : SuperBlockPanel {
  LaneByteSpread spread;

  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const int* grid = reinterpret_cast<const int*>(kIq3sGrid.data());
    const __m512i byte_mask = _mm512_set1_epi32(0xFF);
    const __m512i high_bit = _mm512_set1_epi32(0x100);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, kBlockBytes);
      const __m512i scales = _mm512_loadu_si512(pb + kScales);
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
      for (int j = 0; j < 8; ++j) {
        const __m512i odd = _mm512_add_epi32(
            _mm512_slli_epi32(
                _mm512_and_si512(_mm512_srli_epi32(scales, 4 * j), _mm512_set1_epi32(0x0F)), 1),
            _mm512_set1_epi32(1));
        const __m512i qs[2] = {_mm512_loadu_si512(pb + kQs + 64 * (2 * j)),
                               _mm512_loadu_si512(pb + kQs + 64 * (2 * j + 1))};
        const __m512i qh =
            _mm512_srli_epi32(_mm512_loadu_si512(pb + kQh + 64 * (j / 4)), 8 * (j % 4));
        const __m512i signs = _mm512_loadu_si512(pb + kSigns + 64 * j);
        __m512i part[kTokens];
#pragma GCC unroll 16
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm512_set1_epi32(-kOffset * rows.bsum32(t)[8 * sb + j]);
        }
#pragma GCC unroll 8
        for (int l = 0; l < 8; ++l) {
          const __m512i index = _mm512_or_si512(
              _mm512_and_si512(_mm512_srli_epi32(qs[l / 4], 8 * (l % 4)), byte_mask),
              _mm512_and_si512(_mm512_slli_epi32(qh, 8 - l), high_bit));
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
      const __m512 dw = LoadHalves16(pb);
      for (int t = 0; t < kTokens; ++t) {
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(rows.d(t)[sb]));
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

void GemmIQ3_S(const PanelGemmArgs& a) {
  SuperBlockGemm<IQ3STile>(a, kBlockBytes, LaneByteSpread());
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ3_S, Tier::kAvx512> kIQ3_SAvx512 = {
    .gemm = avx512::GemmIQ3_S,
};

}  // namespace kvmesh::kernels
