// The dot product and accumulate of KV rows stored as floats of any width
// (f32, f16, bf16) on AVX-512: the types differ only in how 16 stored values
// widen to 16 floats, which a policy P gives:
//   Element                          the stored type
//   Load(const Element*)             16 values as floats
//   LoadTail(__mmask16, const Element*)  the masked lanes, others 0
// Products and sums are in float, two accumulators, tails by masked loads.
// Include only from files compiled for AVX-512: everything here has internal
// linkage, so no copy of it can reach another tier's code.
#pragma once

#include "worker/runtime/cpu/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

template <typename P>
float DotFloatRow(int64_t n, const void* k, const void* q) {
  const auto* a = static_cast<const typename P::Element*>(k);
  const auto* b = static_cast<const typename P::Element*>(q);
  __m512 acc0 = _mm512_setzero_ps();
  __m512 acc1 = _mm512_setzero_ps();
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    acc0 = _mm512_fmadd_ps(P::Load(a + i), P::Load(b + i), acc0);
    acc1 = _mm512_fmadd_ps(P::Load(a + i + 16), P::Load(b + i + 16), acc1);
  }
  for (; i + 16 <= n; i += 16) acc0 = _mm512_fmadd_ps(P::Load(a + i), P::Load(b + i), acc0);
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    acc1 = _mm512_fmadd_ps(P::LoadTail(m, a + i), P::LoadTail(m, b + i), acc1);
  }
  return _mm512_reduce_add_ps(_mm512_add_ps(acc0, acc1));
}

template <typename P>
void AccumulateFloatRow(int64_t n, const void* v, float weight, float* out) {
  const auto* x = static_cast<const typename P::Element*>(v);
  const __m512 w = _mm512_set1_ps(weight);
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    _mm512_storeu_ps(out + i, _mm512_fmadd_ps(P::Load(x + i), w, _mm512_loadu_ps(out + i)));
  }
  if (i < n) {
    const __mmask16 m = TailMask(n - i);
    const __m512 sum = _mm512_fmadd_ps(P::LoadTail(m, x + i), w, _mm512_maskz_loadu_ps(m, out + i));
    _mm512_mask_storeu_ps(out + i, m, sum);
  }
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512
