// Q3_K on the AVX-512 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// Levels are used unsigned (0..7) and the offset 4 is folded in per
// sub-block of 16 as -4 times the planar row's bsum16; the sum of (level - 4)
// * x over 16 elements fits in int16 (16 * 4 * 127 < 2^15), so vpdpwssd
// multiplies it by the signed 6-bit scale and accumulates in one step.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 110;
constexpr int kScaleWords = 32;
constexpr int kLow = 224;
constexpr int kHigh = 1248;

// The signed scales (-32..31) of the 16 rows for the 16 sub-blocks, each in
// the low int16 of its lane (high half zero, for vpdpwssd).
inline void DecodeScales(const uint8_t* pb, __m512i scales[16]) {
  const __m512i w[3] = {_mm512_loadu_si512(pb + kScaleWords),
                        _mm512_loadu_si512(pb + kScaleWords + 64),
                        _mm512_loadu_si512(pb + kScaleWords + 128)};
  const __m512i low4 = _mm512_set1_epi32(0x0F);
  const __m512i low2 = _mm512_set1_epi32(3);
  const __m512i offset = _mm512_set1_epi32(32);
  const __m512i low16 = _mm512_set1_epi32(0xFFFF);
#pragma GCC unroll 16
  for (int j = 0; j < 16; ++j) {
    const __m512i low =
        _mm512_and_si512(_mm512_srli_epi32(w[(j % 8) / 4], 8 * (j % 4) + 4 * (j / 8)), low4);
    const __m512i high = _mm512_and_si512(_mm512_srli_epi32(w[2], 8 * (j % 4) + 2 * (j / 4)), low2);
    const __m512i code = _mm512_or_si512(low, _mm512_slli_epi32(high, 4));
    scales[j] = _mm512_and_si512(_mm512_sub_epi32(code, offset), low16);
  }
}

// Group g (0..3) of sub-block j as unsigned levels (0..7): low two bits from
// the qs vectors, the third from the hmask vectors (panel_layout.h).
inline __m512i Group(const uint8_t* pb, int j, int g) {
  const int c = 4 * (j % 2) + g;
  const int shift = 2 * ((j % 8) / 2);
  __m512i low = _mm512_loadu_si512(pb + kLow + 64 * (8 * (j / 8) + c));
  low = _mm512_and_si512(_mm512_srli_epi16(low, shift), _mm512_set1_epi8(3));
  const int bit = 4 * (j / 8) + (j % 8) / 2;
  __m512i high = _mm512_loadu_si512(pb + kHigh + 64 * c);
  high = bit >= 2 ? _mm512_srli_epi16(high, bit - 2) : _mm512_slli_epi16(high, 2 - bit);
  return _mm512_ternarylogic_epi32(low, high, _mm512_set1_epi8(4), 0xF8);  // low | (high & 4)
}

struct Q3KTile : SuperBlockPanel {
  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, kBlockBytes);
      __m512i scales[16];
      DecodeScales(pb, scales);
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
#pragma GCC unroll 16
      for (int j = 0; j < 16; ++j) {
        __m512i w[4];
        for (int g = 0; g < 4; ++g) w[g] = Group(pb, j, g);
        __m512i part[kTokens];
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
          part[t] = _mm512_set1_epi32(-4 * rows.bsum16(t)[16 * sb + j]);
        }
#pragma GCC unroll 4
        for (int g = 0; g < 4; ++g) {
#pragma GCC unroll 8
          for (int t = 0; t < kTokens; ++t) {
            const int8_t* lv = rows.levels(t) + 256 * sb + 16 * j;
            part[t] = _mm512_dpbusd_epi32(part[t], w[g], Broadcast4(lv + 4 * g));
          }
        }
#pragma GCC unroll 8
        for (int t = 0; t < kTokens; ++t) {
          scaled[t] = _mm512_dpwssd_epi32(scaled[t], part[t], scales[j]);
        }
      }
      const __m512 dw = LoadHalves16(pb);
      for (int t = 0; t < kTokens; ++t) {
        const float dx = rows.d(t)[sb];
        const __m512 d = _mm512_mul_ps(dw, _mm512_set1_ps(dx));
        acc[t] = _mm512_add_ps(acc[t], _mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

void GemmQ3_K(const PanelGemmArgs& a) { SuperBlockGemm<Q3KTile>(a, kBlockBytes); }

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ3_K, Tier::kAvx512> kQ3_KAvx512 = {
    .gemm = avx512::GemmQ3_K,
};

}  // namespace kvmesh::kernels
