// bf16 KV rows, AVX-512: widening is a 16-bit shift; products and sums are in
// float; tails by masked loads.
#include "worker/runtime/cpu/kv_rows_simd.h"
#include "worker/runtime/cpu/kv_rows_x86.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

inline __m512 Widen(__m256i halves) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
}

inline __m512 Load16(const uint16_t* b) {
  return Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
}

inline __m512 LoadTail(__mmask16 m, const uint16_t* b) {
  return Widen(_mm256_maskz_loadu_epi16(m, b));
}

}  // namespace

float DotBf16(int64_t n, const void* k, const void* q) {
  const uint16_t* a = static_cast<const uint16_t*>(k);
  const uint16_t* b = static_cast<const uint16_t*>(q);
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(Load16(a + i), Load16(b + i), acc0);
    acc1 = _mm512_fmadd_ps(Load16(a + i + 16), Load16(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(Load16(a + i), Load16(b + i), acc0);
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    acc1 = _mm512_fmadd_ps(LoadTail(m, a + i), LoadTail(m, b + i), acc1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

void AccumulateBf16(int64_t n, const void* v, float weight, float* out) {
  const uint16_t* x = static_cast<const uint16_t*>(v);
  const __m512 w = _mm512_set1_ps(weight);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, _mm512_fmadd_ps(Load16(x + i), w, _mm512_loadu_ps(out + i)));
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    const __m512 sum = _mm512_fmadd_ps(LoadTail(m, x + i), w, _mm512_maskz_loadu_ps(m, out + i));
    _mm512_mask_storeu_ps(out + i, m, sum);
  }
}

}  // namespace kvmesh::kv_rows::avx512
