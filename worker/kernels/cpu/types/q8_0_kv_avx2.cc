// q8_0 KV rows, AVX2 + FMA + F16C: per 32-value block an exact integer dot
// product, scaled by the two blocks' f16 scales.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

using kernels::BlockQ8_0;
using kernels::kLegacyBlockSize;

float DotQ8_0(int64_t n, const void* k, const void* q) {
  const BlockQ8_0* kb = static_cast<const BlockQ8_0*>(k);
  const BlockQ8_0* qb = static_cast<const BlockQ8_0*>(q);
  const int64_t num_blocks = n / kLegacyBlockSize;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const __m256i kv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kb[b].qs));
    const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb[b].qs));
    const __m256 scale = _mm256_set1_ps(HalfToFloatF16c(kb[b].d) * HalfToFloatF16c(qb[b].d));
    acc = _mm256_fmadd_ps(DotBytes(kv, qv), scale, acc);
  }
  return HorizontalSum(acc);
}

void AccumulateQ8_0(int64_t n, const void* v, float weight, float* out) {
  const BlockQ8_0* vb = static_cast<const BlockQ8_0*>(v);
  const int64_t num_blocks = n / kLegacyBlockSize;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const __m256 scale = _mm256_set1_ps(weight * HalfToFloatF16c(vb[b].d));
    float* o = out + b * kLegacyBlockSize;
    for (int g = 0; g < kLegacyBlockSize; g += 8) AccumulateBytes8(vb[b].qs + g, scale, o + g);
  }
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ8_0, Isa::kAvx2> kQ8_0KvAvx2 = {
    .dot = kv_rows::avx2::DotQ8_0,
    .accumulate = kv_rows::avx2::AccumulateQ8_0,
};

}  // namespace kvmesh::kernels
