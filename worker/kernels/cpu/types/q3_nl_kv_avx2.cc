// q3_nl KV rows, AVX2 + FMA + F16C: codes unpack to their signed-byte levels,
// then the same exact per-block integer dot product as q4_0 (the query is
// q8_0).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

using kernels::BlockQ3_NL;
using kernels::BlockQ8_0;
using kernels::kLegacyBlockSize;

float DotQ3_NL(int64_t n, const void* k, const void* q) {
  const BlockQ3_NL* kb = static_cast<const BlockQ3_NL*>(k);
  const BlockQ8_0* qb = static_cast<const BlockQ8_0*>(q);
  const int64_t num_blocks = n / kLegacyBlockSize;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb[b].qs));
    const __m256 scale = _mm256_set1_ps(HalfToFloatF16c(kb[b].d) * HalfToFloatF16c(qb[b].d));
    acc = _mm256_fmadd_ps(DotBytes(UnpackQ3_NL(kb[b]), qv), scale, acc);
  }
  return HorizontalSum(acc);
}

void AccumulateQ3_NL(int64_t n, const void* v, float weight, float* out) {
  const BlockQ3_NL* vb = static_cast<const BlockQ3_NL*>(v);
  const int64_t num_blocks = n / kLegacyBlockSize;
  alignas(32) int8_t levels[kLegacyBlockSize];
  for (int64_t b = 0; b < num_blocks; ++b) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(levels), UnpackQ3_NL(vb[b]));
    const __m256 scale = _mm256_set1_ps(weight * HalfToFloatF16c(vb[b].d));
    float* o = out + b * kLegacyBlockSize;
    for (int g = 0; g < kLegacyBlockSize; g += 8) AccumulateBytes8(levels + g, scale, o + g);
  }
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ3_NL, Isa::kAvx2> kQ3_NLKvAvx2 = {
    .dot = kv_rows::avx2::DotQ3_NL,
    .accumulate = kv_rows::avx2::AccumulateQ3_NL,
};

}  // namespace kvmesh::kernels
