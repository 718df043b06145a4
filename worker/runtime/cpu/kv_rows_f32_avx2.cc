// f32 KV rows, AVX2 + FMA.
#include "worker/runtime/cpu/kv_rows_simd.h"
#include "worker/runtime/cpu/kv_rows_x86.h"

namespace kvmesh::kv_rows::avx2 {

float DotF32(int64_t n, const void* k, const void* q) {
  const float* a = static_cast<const float*>(k);
  const float* b = static_cast<const float*>(q);
  __m256 acc0 = _mm256_setzero_ps();
  __m256 acc1 = _mm256_setzero_ps();
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
    acc1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), acc1);
  }
  for (; i + 8 <= n; i += 8) {
    acc0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc0);
  }
  float sum = HorizontalSum(_mm256_add_ps(acc0, acc1));
  for (; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void AccumulateF32(int64_t n, const void* v, float weight, float* out) {
  const float* x = static_cast<const float*>(v);
  const __m256 w = _mm256_set1_ps(weight);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(_mm256_loadu_ps(x + i), w, _mm256_loadu_ps(out + i)));
  }
  for (; i < n; ++i) out[i] += weight * x[i];
}

}  // namespace kvmesh::kv_rows::avx2
