// bf16 KV rows, AVX2 + FMA: a bf16 is the top half of an f32, so widening is a
// 16-bit shift; products and sums are in float.
#include "worker/runtime/cpu/kv_rows_simd.h"
#include "worker/runtime/cpu/kv_rows_x86.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

inline __m256 Load8(const uint16_t* b) {
  const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
}

}  // namespace

float DotBf16(int64_t n, const void* k, const void* q) {
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
  for (; i < n; ++i) sum += Bf16ToFloatBits(a[i]) * Bf16ToFloatBits(b[i]);
  return sum;
}

void AccumulateBf16(int64_t n, const void* v, float weight, float* out) {
  const uint16_t* x = static_cast<const uint16_t*>(v);
  const __m256 w = _mm256_set1_ps(weight);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    _mm256_storeu_ps(out + i, _mm256_fmadd_ps(Load8(x + i), w, _mm256_loadu_ps(out + i)));
  }
  for (; i < n; ++i) out[i] += weight * Bf16ToFloatBits(x[i]);
}

}  // namespace kvmesh::kv_rows::avx2
