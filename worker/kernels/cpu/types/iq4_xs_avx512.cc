// IQ4_XS on the AVX-512 tier: panel GEMM equal to the scalar reference bit
// for bit (see panel_gemm.h).
//
// A byte shuffle turns each code into its value + 128 (unsigned), vpdpbusd
// sums a sub-block of 32 against x, starting from -128 times the planar
// row's bsum32 so the sum is exact; the signed 6-bit scale multiplies it in
// int32 (the sum can exceed int16).
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_kquant.h"

namespace kvmesh::kernels::avx512 {
namespace {

constexpr size_t kBlockBytes = 16 * 136;
constexpr int kScalesH = 32;
constexpr int kScalesL = 64;
constexpr int kCodes = 128;

struct IQ4XSTile : SuperBlockPanel {
  __m512i table;  // kIq4Values[c] + 128 in byte c of every 128-bit lane

  template <int kTokens>
  void Run(int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    __m512 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm512_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      if (kTokens == 1 || t0 == 0) PrefetchAhead(pb, kBlockBytes);
      const __m512i low = _mm512_loadu_si512(pb + kScalesL);
      const __m512i high = _mm512_cvtepu16_epi32(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(pb + kScalesH)));
      __m512i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int j = 0; j < 8; ++j) {
        const __m512i scale = _mm512_sub_epi32(
            _mm512_or_si512(
                _mm512_and_si512(_mm512_srli_epi32(low, 4 * j), _mm512_set1_epi32(0x0F)),
                _mm512_slli_epi32(
                    _mm512_and_si512(_mm512_srli_epi32(high, 2 * j), _mm512_set1_epi32(3)), 4)),
            _mm512_set1_epi32(32));
        AddNibbleTableSubBlock(pb + kCodes + 64 * 4 * j, table, 128, rows, sb, j, scale, scaled);
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

void GemmIQ4_XS(const PanelGemmArgs& a) {
  SuperBlockGemm<IQ4XSTile>(a, kBlockBytes, _mm512_load_si512(kIq4Bytes.bytes));
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kIQ4_XS, Tier::kAvx512> kIQ4_XSAvx512 = {
    .gemm = avx512::GemmIQ4_XS,
};

}  // namespace kvmesh::kernels
