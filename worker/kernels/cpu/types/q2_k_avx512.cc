// Q2_K on the AVX-512 tier: panel GEMM equal to the scalar reference bit for
// bit (see panel_gemm.h).
//
// Per sub-block of 16 the exact sum of level * x (at most 16 * 3 * 127 < 2^15)
// is formed with vpdpbusd, so vpdpwssd can multiply it by the 4-bit scale and
// accumulate in one step. The mins are applied per super-block with vpdpwssd
// on (min, min) pairs times the planar row's bsum16 pairs.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 84;
constexpr int kScaleWords = 64;
constexpr int kLevels = 320;

// The level vectors of a panel-block (panel_layout.h): vector 8h + 4c + g
// holds group g of sub-block 8h + 2q + c in bits 2q, 2q + 1 of each byte
// (h, c in 0..1, q in 0..3). Each vector is loaded once per super-block and
// its four planes are masked in place: a plane q level is then level * 4^q
// (at most 192, still a byte), and the exact sum over a sub-block comes out
// 4^q times too large, which one arithmetic shift of the int32 sum undoes.

struct Q2KTile : SuperBlockPanel {
  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    const __m512i nibble = _mm512_set1_epi32(0x0F);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, kBlockBytes);
      __m512i words[4];  // the scale bytes of sub-blocks 4w .. 4w + 3, as lanes
      for (int w = 0; w < 4; ++w) words[w] = _mm512_loadu_si512(pb + kScaleWords + 64 * w);
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
#pragma GCC unroll 4
      for (int hc = 0; hc < 4; ++hc) {  // h = hc / 2, c = hc % 2
        __m512i v[4];
        for (int g = 0; g < 4; ++g) {
          v[g] = _mm512_loadu_si512(pb + kLevels + 64 * (8 * (hc / 2) + 4 * (hc % 2) + g));
        }
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {
          const int j = 8 * (hc / 2) + 2 * q + hc % 2;
          const __m512i scale =
              _mm512_and_si512(_mm512_srli_epi32(words[j / 4], 8 * (j % 4)), nibble);
          const __m512i plane = _mm512_set1_epi8(static_cast<char>(3 << (2 * q)));
          __m512i w[4];
          for (int g = 0; g < 4; ++g) w[g] = _mm512_and_si512(v[g], plane);
          __m512i part[kTokens];
#pragma GCC unroll 8
          for (int t = 0; t < kTokens; ++t) part[t] = _mm512_setzero_si512();
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
            const __m512i sum = q == 0 ? part[t] : _mm512_srai_epi32(part[t], 2 * q);
            scaled[t] = _mm512_dpwssd_epi32(scaled[t], sum, scale);
          }
        }
      }
      // (min 2k, min 2k+1) int16 pairs of each row.
      __m512i mins[8];
      for (int k = 0; k < 8; ++k) {
        const int j = 2 * k;
        const __m512i first =
            _mm512_and_si512(_mm512_srli_epi32(words[j / 4], 8 * (j % 4) + 4), nibble);
        const __m512i second =
            _mm512_and_si512(_mm512_srli_epi32(words[j / 4], 8 * (j % 4 + 1) + 4), nibble);
        mins[k] = _mm512_or_si512(first, _mm512_slli_epi32(second, 16));
      }
      const __m512 dw = LoadHalves16(pb);
      const __m512 dminw = LoadHalves16(pb + 32);
      for (int t = 0; t < kTokens; ++t) {
        const int16_t* bsum16 = rows.bsum16(t) + 16 * sb;
        __m512i min_sum = _mm512_setzero_si512();
        for (int k = 0; k < 8; ++k) {
          min_sum =
              _mm512_dpwssd_epi32(min_sum, mins[k], _mm512_set1_epi32(LoadI32(bsum16 + 2 * k)));
        }
        const __m512 dx = _mm512_set1_ps(rows.d(t)[sb]);
        const __m512 d = _mm512_mul_ps(dw, dx);
        const __m512 dmin = _mm512_mul_ps(dminw, dx);
        const __m512 term = _mm512_sub_ps(_mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled[t])),
                                          _mm512_mul_ps(dmin, _mm512_cvtepi32_ps(min_sum)));
        acc[t] = _mm512_add_ps(acc[t], term);
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm512_storeu_ps(y + (t0 + t) * y_stride, acc[t]);
  }
};

void GemmQ2_K(const PanelGemmArgs& a) { SuperBlockGemm<Q2KTile>(a, kBlockBytes); }

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ2_K, Tier::kAvx512> kQ2_KAvx512 = {
    .gemm = avx512::GemmQ2_K,
};

}  // namespace kvmesh::kernels
