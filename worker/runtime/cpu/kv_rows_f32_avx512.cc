// f32 KV rows, AVX-512 (tails by masked loads).
#include "worker/runtime/cpu/kv_rows_simd.h"
#include "worker/runtime/cpu/kv_rows_x86.h"

namespace kvmesh::kv_rows::avx512 {

float DotF32(int64_t n, const void* k, const void* q) {
  const float* a = static_cast<const float*>(k);
  const float* b = static_cast<const float*>(q);
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
    acc1 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i + 16), _mm512_loadu_ps(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) {
    acc0 = _mm512_fmadd_ps(_mm512_loadu_ps(a + i), _mm512_loadu_ps(b + i), acc0);
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    acc1 = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i), acc1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

void AccumulateF32(int64_t n, const void* v, float weight, float* out) {
  const float* x = static_cast<const float*>(v);
  const __m512 w = _mm512_set1_ps(weight);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, _mm512_fmadd_ps(_mm512_loadu_ps(x + i), w, _mm512_loadu_ps(out + i)));
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    const __m512 sum =
        _mm512_fmadd_ps(_mm512_maskz_loadu_ps(m, x + i), w, _mm512_maskz_loadu_ps(m, out + i));
    _mm512_mask_storeu_ps(out + i, m, sum);
  }
}

}  // namespace kvmesh::kv_rows::avx512
