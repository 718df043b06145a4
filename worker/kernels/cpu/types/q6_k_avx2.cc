// Q6_K on the AVX2 tier: panel GEMM and single-row dot product, both equal to
// the scalar reference bit for bit (see panel_gemm.h).
//
// Levels are made signed (level - 32, in -32..31) and multiplied with
// vpmaddubsw as |level| times x with the level's sign; a 16-element
// sub-block's four groups of pairs (each at most 2 * 32 * 127) add up in
// int16, and vpmaddwd with the (scale, scale) pair scales them in int32.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_kquant.h"

namespace kvmesh::kernels::avx2 {
namespace {

constexpr size_t kBlockBytes = 16 * 210;
constexpr int kScales = 32;
constexpr int kLow = 288;
constexpr int kHigh = 288 + 32 * 64;

// This half of group vector G as signed levels (level - 32).
inline __m256i Q6Group(const uint8_t* pb, int half, int group) {
  __m256i low = Load256(pb + kLow + 64 * (group % 32) + 32 * half);
  if (group >= 32) low = _mm256_srli_epi16(low, 4);
  low = _mm256_and_si256(low, _mm256_set1_epi8(0x0F));
  __m256i high = Load256(pb + kHigh + 64 * (group % 16) + 32 * half);
  const int s = group / 16;
  if (s > 0) high = _mm256_srli_epi16(high, 2 * s);
  high = _mm256_slli_epi16(_mm256_and_si256(high, _mm256_set1_epi8(3)), 4);
  return _mm256_sub_epi8(_mm256_or_si256(low, high), _mm256_set1_epi8(32));
}

struct Q6KTile {
  const uint8_t* panel;
  int64_t super_blocks;
  const uint8_t* x;
  size_t x_stride;
  PlanarLayout layout;
  float* y;
  int64_t y_stride;

  template <int kTokens>
  void Run(int half, int64_t t0) const {
    const Q8KRows<kTokens> rows(x, x_stride, layout, t0);
    __m256 acc[kTokens];
    for (int t = 0; t < kTokens; ++t) acc[t] = _mm256_setzero_ps();
    for (int64_t sb = 0; sb < super_blocks; ++sb) {
      const uint8_t* pb = panel + sb * kBlockBytes;
      __m256i scaled[kTokens];
      for (int t = 0; t < kTokens; ++t) scaled[t] = _mm256_setzero_si256();
      for (int j = 0; j < 16; ++j) {
        if ((kTokens == 1 || t0 == 0) && half == 0) {
          PrefetchAhead<kPrefetchAheadFar>(pb + j * (kBlockBytes / 16), kBlockBytes / 16);
        }
        // (scale, scale) int16 pairs of the 8 rows of this half.
        const __m128i s8 =
            _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pb + kScales + 16 * j + 8 * half));
        const __m256i s32 = _mm256_cvtepi8_epi32(s8);
        const __m256i scale = _mm256_or_si256(_mm256_and_si256(s32, _mm256_set1_epi32(0xFFFF)),
                                              _mm256_slli_epi32(s32, 16));
        __m256i w[4], wabs[4];
        for (int g = 0; g < 4; ++g) {
          w[g] = Q6Group(pb, half, 4 * j + g);
          wabs[g] = _mm256_abs_epi8(w[g]);
        }
        for (int t = 0; t < kTokens; ++t) {
          const int8_t* lv = rows.levels[t] + 256 * sb + 16 * j;
          __m256i pairs = _mm256_maddubs_epi16(wabs[0], _mm256_sign_epi8(Broadcast4(lv), w[0]));
          for (int g = 1; g < 4; ++g) {
            pairs = _mm256_add_epi16(
                pairs,
                _mm256_maddubs_epi16(wabs[g], _mm256_sign_epi8(Broadcast4(lv + 4 * g), w[g])));
          }
          scaled[t] = _mm256_add_epi32(scaled[t], _mm256_madd_epi16(pairs, scale));
        }
      }
      const __m256 dw = LoadHalves8(pb + 16 * half);
      for (int t = 0; t < kTokens; ++t) {
        const __m256 d = _mm256_mul_ps(dw, _mm256_set1_ps(rows.d[t][sb]));
        acc[t] = _mm256_add_ps(acc[t], _mm256_mul_ps(d, _mm256_cvtepi32_ps(scaled[t])));
      }
    }
    for (int t = 0; t < kTokens; ++t) _mm256_storeu_ps(y + (t0 + t) * y_stride + 8 * half, acc[t]);
  }
};

void GemmQ6_K(const PanelGemmArgs& a) {
  const PlanarLayout layout = GetPlanarLayout(TensorType::kQ8_K, a.cols);
  const int64_t super_blocks = a.cols / 256;
  for (int64_t p = 0; p < a.num_panels; ++p) {
    const Q6KTile tile{a.panels + p * super_blocks * kBlockBytes,
                       super_blocks,
                       a.x,
                       a.x_stride,
                       layout,
                       a.y + p * kPanelRows,
                       a.y_stride};
    ForEachHalfAndTokenTile(a.num_tokens, tile);
  }
}

float VecDotQ6_KQ8_K(int64_t n, const void* w, const void* x) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);
  const __m256i low = _mm256_set1_epi8(0x0F);
  const __m256i three = _mm256_set1_epi8(3);
  const __m256i offset = _mm256_set1_epi8(32);
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b, wb += 210, xb += 292) {
    const uint8_t* ql = wb;
    const uint8_t* qh = wb + 128;
    const int8_t* scales = reinterpret_cast<const int8_t*>(wb + 192);
    int32_t scaled_sum = 0;
    for (int half = 0; half < 2; ++half) {
      const __m256i high_bits = Load256(qh + 32 * half);
      for (int quarter = 0; quarter < 4; ++quarter) {
        __m256i v = Load256(ql + 64 * half + 32 * (quarter % 2));
        if (quarter >= 2) v = _mm256_srli_epi16(v, 4);
        const __m256i high = _mm256_and_si256(_mm256_srli_epi16(high_bits, 2 * quarter), three);
        const __m256i levels = _mm256_sub_epi8(
            _mm256_or_si256(_mm256_and_si256(v, low), _mm256_slli_epi16(high, 4)), offset);
        const int e0 = 128 * half + 32 * quarter;
        const __m256i xq = Load256(xb + 4 + e0);
        const __m256i dot =
            PairSums(_mm256_maddubs_epi16(_mm256_abs_epi8(levels), _mm256_sign_epi8(xq, levels)));
        const int32_t first = ReduceAdd(_mm256_blend_epi32(dot, _mm256_setzero_si256(), 0xF0));
        const int32_t second = ReduceAdd(_mm256_blend_epi32(dot, _mm256_setzero_si256(), 0x0F));
        scaled_sum += scales[e0 / 16] * first;
        scaled_sum += scales[e0 / 16 + 1] * second;
      }
    }
    uint16_t dh;
    std::memcpy(&dh, wb + 208, 2);
    sum += HalfToFloat(dh) * LoadF32(xb) * static_cast<float>(scaled_sum);
  }
  return sum;
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ6_K, Tier::kAvx2> kQ6_KAvx2 = {
    .vec_dot = avx2::VecDotQ6_KQ8_K,
    .gemm = avx2::GemmQ6_K,
};

}  // namespace kvmesh::kernels
