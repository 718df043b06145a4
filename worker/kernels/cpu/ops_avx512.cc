// The forward pass's row ops on the AVX-512 tier (contracts in ops.h).
#include "worker/kernels/cpu/ops.h"
#include "worker/kernels/cpu/simd/avx512_util.h"

namespace kvmesh::kernels::avx512 {
namespace {

// exp(x) of 8 doubles, relative error below 1e-15: x = (16 n + j) ln2 / 16
// + r with |r| <= ln2 / 32, exp(r) by its Taylor series to r^6 (the next term
// is below 5e-16 of it), times 2^(j/16) from a table of the 16 correctly
// rounded values, times 2^n. Inputs are clamped to +-1000 first (beyond the
// double range either way), keeping NaN.
__m512d ExpPd(__m512d x) {
  x = _mm512_min_pd(_mm512_set1_pd(1000.0), x);  // the second operand wins for NaN
  x = _mm512_max_pd(_mm512_set1_pd(-1000.0), x);
  const __m512d k = _mm512_roundscale_pd(_mm512_mul_pd(x, _mm512_set1_pd(0x1.71547652b82fep+4)),
                                         _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  // ln 2 / 16 split so that k * hi is exact (|k| < 2^15, hi has 33 bits).
  __m512d r = _mm512_fnmadd_pd(k, _mm512_set1_pd(0x1.62e42fef00000p-5), x);
  r = _mm512_fnmadd_pd(k, _mm512_set1_pd(0x1.473de6af278edp-38), r);
  __m512d p = _mm512_set1_pd(1.0 / 720.0);
  for (double c : {1.0 / 120.0, 1.0 / 24.0, 1.0 / 6.0, 0.5, 1.0, 1.0}) {
    p = _mm512_fmadd_pd(p, r, _mm512_set1_pd(c));
  }
  // 2^(j/16) for j = k mod 16: the low four bits of k pick a table entry.
  const __m512d low = _mm512_setr_pd(
      0x1.0000000000000p+0, 0x1.0b5586cf9890fp+0, 0x1.172b83c7d517bp+0, 0x1.2387a6e756238p+0,
      0x1.306fe0a31b715p+0, 0x1.3dea64c123422p+0, 0x1.4bfdad5362a27p+0, 0x1.5ab07dd485429p+0);
  const __m512d high = _mm512_setr_pd(
      0x1.6a09e667f3bcdp+0, 0x1.7a11473eb0187p+0, 0x1.8ace5422aa0dbp+0, 0x1.9c49182a3f090p+0,
      0x1.ae89f995ad3adp+0, 0x1.c199bdd85529cp+0, 0x1.d5818dcfba487p+0, 0x1.ea4afa2a490dap+0);
  const __m512i j = _mm512_cvtepi32_epi64(_mm512_cvtpd_epi32(k));
  const __m512d table = _mm512_permutex2var_pd(low, j, high);
  const __m512d n = _mm512_roundscale_pd(_mm512_mul_pd(k, _mm512_set1_pd(1.0 / 16.0)),
                                         _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  return _mm512_scalef_pd(_mm512_mul_pd(p, table), n);
}

// expf(v) for 16 floats, rounded once from the double result.
__m512 ExpPs(__m512 v) {
  const __m256 lo = _mm512_cvtpd_ps(ExpPd(_mm512_cvtps_pd(_mm512_castps512_ps256(v))));
  const __m256 hi = _mm512_cvtpd_ps(ExpPd(_mm512_cvtps_pd(_mm512_extractf32x8_ps(v, 1))));
  return _mm512_insertf32x8(_mm512_castps256_ps512(lo), hi, 1);
}

__mmask16 FirstLanes(int64_t count) {
  return static_cast<__mmask16>(count >= 16 ? 0xFFFF : (1u << count) - 1);
}

}  // namespace

void RmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  // The sum stays sequential in double (the reference's, and ggml's, order).
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum_squares / static_cast<double>(n));
  const __m512 scale = _mm512_set1_ps(1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean + eps))));
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    const __m512 v = _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), scale);
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(v, _mm512_maskz_loadu_ps(m, weight + i)));
  }
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n) {
  const __m512 one = _mm512_set1_ps(1.0f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = ExpPs(_mm512_sub_ps(_mm512_setzero_ps(), g));
    const __m512 silu = _mm512_div_ps(g, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(out + i, m, _mm512_mul_ps(silu, _mm512_maskz_loadu_ps(m, up + i)));
  }
}

void Scale(float* x, int64_t n, float factor) {
  const __m512 f = _mm512_set1_ps(factor);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    _mm512_mask_storeu_ps(x + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), f));
  }
}

void RoundToHalf(float* x, int64_t n) {
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    const __m256i h = _mm512_cvtps_ph(_mm512_maskz_loadu_ps(m, x + i),
                                      _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_mask_storeu_ps(x + i, m, _mm512_cvtph_ps(h));
  }
}

double ExpShifted(float* x, int64_t n, float shift) {
  const __m512 s = _mm512_set1_ps(shift);
  const __m512 floor = _mm512_set1_ps(kExpShiftedFloor);
  // The sum in double, 16 lanes in two accumulators, reduced in a fixed
  // order at the end (no dependence on one add per value).
  __m512d acc_lo = _mm512_setzero_pd(), acc_hi = _mm512_setzero_pd();
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 m = FirstLanes(n - i);
    // 0 below the floor (exp computed at the floor, so no subnormal arises
    // on the way; a NaN stays a NaN: max returns d for it).
    const __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(m, x + i), s);
    const __mmask16 keep = _mm512_mask_cmp_ps_mask(m, d, floor, _CMP_NLT_UQ);
    const __m512 e = _mm512_maskz_mov_ps(keep, ExpPs(_mm512_max_ps(floor, d)));
    _mm512_mask_storeu_ps(x + i, m, e);
    acc_lo = _mm512_add_pd(acc_lo, _mm512_cvtps_pd(_mm512_castps512_ps256(e)));
    acc_hi = _mm512_add_pd(acc_hi, _mm512_cvtps_pd(_mm512_extractf32x8_ps(e, 1)));
  }
  return _mm512_reduce_add_pd(_mm512_add_pd(acc_lo, acc_hi));
}

}  // namespace kvmesh::kernels::avx512
