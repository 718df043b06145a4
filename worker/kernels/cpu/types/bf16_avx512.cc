// BF16 on the AVX-512 tier without the BF16 instructions: panel GEMM,
// single-row dot product and the exact conversions. The GEMM applies each
// element pair as the AVX512_BF16 dot-product instruction does (odd element
// first), so bf16_avx512bf16.cc gives the same results wherever no input or
// partial sum is subnormal (that instruction flushes those to zero).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx512_float.h"

namespace kvmesh::kernels::avx512 {
namespace {

inline __m512 EvenHalves(__m512i v) { return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16)); }
inline __m512 OddHalves(__m512i v) {
  return _mm512_castsi512_ps(_mm512_and_si512(v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

struct Bf16Pair {
  __m512 even, odd;
};

struct Bf16 {
  static constexpr size_t kStepBytes = 64;
  static constexpr int kStepElems = 2;
  static constexpr size_t kXBytes = 4;
  static Bf16Pair Load(const uint8_t* p) {
    const __m512i v = _mm512_loadu_si512(p);
    return {EvenHalves(v), OddHalves(v)};
  }
  static __m512 Accumulate(__m512 acc, const Bf16Pair& w, const uint8_t* xp) {
    const __m512i xv = _mm512_set1_epi32(LoadI32(xp));
    acc = _mm512_fmadd_ps(w.odd, OddHalves(xv), acc);
    return _mm512_fmadd_ps(w.even, EvenHalves(xv), acc);
  }
};

__m512 LoadBf16Masked(const uint16_t* p, __mmask16 m) {
  return _mm512_castsi512_ps(
      _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p)), 16));
}

void GemmBf16(const PanelGemmArgs& args) { FloatGemm<Bf16>(args); }

float VecDotBf16(int64_t n, const void* w, const void* x) {
  const uint16_t* wb = static_cast<const uint16_t*>(w);
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  return DotFloatLanes(n, [&](int64_t i, __mmask16 m, __m512* wv, __m512* xv) {
    *wv = LoadBf16Masked(wb + i, m);
    *xv = LoadBf16Masked(xb + i, m);
  });
}

void QuantizeRowBf16(const float* src, void* dst, int64_t n) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  const __m512i abs_mask = _mm512_set1_epi32(0x7fffffff);
  const __m512i inf = _mm512_set1_epi32(0x7f800000);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    const __m512i bits = _mm512_castps_si512(_mm512_maskz_loadu_ps(m, src + i));
    // Round to nearest even; NaN stays a quiet NaN (common/half.h).
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_srli_epi32(
        _mm512_add_epi32(bits, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __m512i quiet_nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(64));
    const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(bits, abs_mask), inf);
    const __m512i result = _mm512_mask_mov_epi32(rounded, nan, quiet_nan);
    _mm256_mask_storeu_epi16(out + i, m, _mm512_cvtepi32_epi16(result));
  }
}

void DequantizeRowBf16(const void* src, float* dst, int64_t n) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    _mm512_mask_storeu_ps(dst + i, m, LoadBf16Masked(in + i, m));
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx512

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kBF16, Tier::kAvx512> kBF16Avx512 = {
    .to_float = avx512::DequantizeRowBf16,
    .from_float = avx512::QuantizeRowBf16,
    .vec_dot = avx512::VecDotBf16,
    .gemm = avx512::GemmBf16,
};

}  // namespace kvmesh::kernels
