// f16 KV rows, AVX2 + FMA + F16C: halves widen to floats (exactly), products
// and sums are in float.
#include "worker/runtime/cpu/kv_rows_simd.h"
#include "worker/runtime/cpu/kv_rows_x86.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

inline __m256 Load8(const uint16_t* h) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(h)));
}

}  // namespace

float DotF16(int64_t n, const void* k, const void* q) {
  const uint16_t* a = static_cast<const uint16_t*>(k);
  const uint16_t* b = static_cast<const uint16_t*>(q);
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(Load8(a + i), Load8(b + i), acc0);
    acc1 = _mm256_fmadd_ps(Load8(a + i + 8), Load8(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) acc0 = _mm256_fmadd_ps(Load8(a + i), Load8(b + i), acc0);
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += HalfToFloatF16c(a[i]) * HalfToFloatF16c(b[i]);
  return sum;
}

void AccumulateF16(int64_t n, const void* v, float weight, float* out) {
  const uint16_t* x = static_cast<const uint16_t*>(v);
  const __m256 w = _mm256_set1_ps(weight);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(Load8(x + i), w, _mm256_loadu_ps(out + i)));
  }
  for (; i < n; ++i) out[i] += weight * HalfToFloatF16c(x[i]);
}

}  // namespace kvmesh::kv_rows::avx2
