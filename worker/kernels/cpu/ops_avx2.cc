// The forward pass's row ops on the AVX2 tier (contracts in ops.h).
#include "worker/kernels/cpu/ops.h"
#include "worker/kernels/cpu/simd/avx2_util.h"

namespace kvmesh::kernels::avx2 {
namespace {

// exp(x) of 4 doubles as in ops_avx512.cc; 2^n is applied as two factors
// 2^(n/2) and 2^(n - n/2), each a normal double for |n| <= 1443.
__m256d ExpPd(__m256d x) {
  x = _mm256_min_pd(_mm256_set1_pd(1000.0), x);  // the second operand wins for NaN
  x = _mm256_max_pd(_mm256_set1_pd(-1000.0), x);
  const __m256d n = _mm256_round_pd(_mm256_mul_pd(x, _mm256_set1_pd(1.4426950408889634)),
                                    _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256d r = _mm256_fnmadd_pd(n, _mm256_set1_pd(6.93147180369123816490e-01), x);
  r = _mm256_fnmadd_pd(n, _mm256_set1_pd(1.90821492927058770002e-10), r);
  __m256d p = _mm256_set1_pd(1.0 / 39916800.0);
  constexpr double kInverseFactorials[] = {
      1.0 / 3628800.0, 1.0 / 362880.0, 1.0 / 40320.0, 1.0 / 5040.0, 1.0 / 720.0, 1.0 / 120.0,
      1.0 / 24.0,      1.0 / 6.0,      0.5,           1.0,          1.0};
  for (double c : kInverseFactorials) p = _mm256_fmadd_pd(p, r, _mm256_set1_pd(c));
  // NaN lanes convert to some integer; their p is NaN anyway.
  const __m128i ni = _mm256_cvtpd_epi32(n);
  const __m128i half = _mm_srai_epi32(ni, 1);
  const __m128i rest = _mm_sub_epi32(ni, half);
  auto pow2 = [](__m128i e) {
    const __m256i biased = _mm256_add_epi64(_mm256_cvtepi32_epi64(e), _mm256_set1_epi64x(1023));
    return _mm256_castsi256_pd(_mm256_slli_epi64(biased, 52));
  };
  return _mm256_mul_pd(_mm256_mul_pd(p, pow2(half)), pow2(rest));
}

__m256 ExpPs(__m256 v) {
  const __m128 lo = _mm256_cvtpd_ps(ExpPd(_mm256_cvtps_pd(_mm256_castps256_ps128(v))));
  const __m128 hi = _mm256_cvtpd_ps(ExpPd(_mm256_cvtps_pd(_mm256_extractf128_ps(v, 1))));
  return _mm256_insertf128_ps(_mm256_castps128_ps256(lo), hi, 1);
}

}  // namespace

void RmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps) {
  double sum_squares = 0.0;
  for (int64_t i = 0; i < n; ++i) sum_squares += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum_squares / static_cast<double>(n));
  const float scale = 1.0f / _mm_cvtss_f32(_mm_sqrt_ss(_mm_set_ss(mean + eps)));
  const __m256 scale_v = _mm256_set1_ps(scale);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), scale_v);
    _mm256_storeu_ps(out + i, _mm256_mul_ps(v, _mm256_loadu_ps(weight + i)));
  }
  for (; i < n; ++i) out[i] = (x[i] * scale) * weight[i];
}

void SwiGlu(const float* gate, const float* up, float* out, int64_t n) {
  const __m256 one = _mm256_set1_ps(1.0f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 g = _mm256_loadu_ps(gate + i);
    const __m256 e = ExpPs(_mm256_sub_ps(_mm256_setzero_ps(), g));
    const __m256 silu = _mm256_div_ps(g, _mm256_add_ps(one, e));
    _mm256_storeu_ps(out + i, _mm256_mul_ps(silu, _mm256_loadu_ps(up + i)));
  }
  if (i < n) {
    // The tail through a zero-padded buffer, with the same vector steps.
    alignas(32) float g[8] = {}, u[8] = {}, o[8];
    for (int64_t k = i; k < n; ++k) {
      g[k - i] = gate[k];
      u[k - i] = up[k];
    }
    const __m256 gv = _mm256_load_ps(g);
    const __m256 e = ExpPs(_mm256_sub_ps(_mm256_setzero_ps(), gv));
    _mm256_store_ps(o, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(one, e)), _mm256_load_ps(u)));
    for (int64_t k = i; k < n; ++k) out[k] = o[k - i];
  }
}

void RoundToHalf(float* x, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m128i h =
        _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm256_storeu_ps(x + i, _mm256_cvtph_ps(h));
  }
  for (; i < n; ++i) {
    const __m128i h = _mm_cvtps_ph(_mm_set_ss(x[i]), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    x[i] = _mm_cvtss_f32(_mm_cvtph_ps(h));
  }
}

void Scale(float* x, int64_t n, float factor) {
  const __m256 f = _mm256_set1_ps(factor);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), f));
  for (; i < n; ++i) x[i] *= factor;
}

// exp(d) of 8 floats, 0 where d < kExpShiftedFloor (computed at the floor,
// so no subnormal arises on the way; a NaN stays a NaN).
__m256 ExpAboveFloor(__m256 d) {
  const __m256 floor = _mm256_set1_ps(kExpShiftedFloor);
  const __m256 keep = _mm256_cmp_ps(d, floor, _CMP_NLT_UQ);
  return _mm256_and_ps(ExpPs(_mm256_max_ps(floor, d)), keep);  // max returns d for NaN
}

double ExpShifted(float* x, int64_t n, float shift) {
  const __m256 s = _mm256_set1_ps(shift);
  // The sum in double, 8 lanes in two accumulators, reduced in a fixed order
  // at the end; the tail after them, in order.
  __m256d acc_lo = _mm256_setzero_pd(), acc_hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = ExpAboveFloor(_mm256_sub_ps(_mm256_loadu_ps(x + i), s));
    _mm256_storeu_ps(x + i, e);
    acc_lo = _mm256_add_pd(acc_lo, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    acc_hi = _mm256_add_pd(acc_hi, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  alignas(32) double lanes[4];
  _mm256_store_pd(lanes, _mm256_add_pd(acc_lo, acc_hi));
  double sum = (lanes[0] + lanes[1]) + (lanes[2] + lanes[3]);
  for (; i < n; ++i) {
    alignas(32) float one[8] = {x[i] - shift};
    _mm256_store_ps(one, ExpAboveFloor(_mm256_load_ps(one)));
    x[i] = one[0];
    sum += x[i];
  }
  return sum;
}

}  // namespace kvmesh::kernels::avx2
