// q3_nl KV rows, AVX-512: two blocks' codes unpacked to their signed-byte
// levels per 512-bit step, then the exact integer dot product with the q8_0
// query.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

using kernels::BlockQ3_NL;
using kernels::BlockQ8_0;
using kernels::kLegacyBlockSize;

inline __m256i Levels(const BlockQ8_0& block) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(block.qs));
}

inline float Scale(const BlockQ3_NL& a, const BlockQ8_0& b) {
  return HalfToFloatF16c(a.d) * HalfToFloatF16c(b.d);
}

float DotQ3_NL(int64_t n, const void* k, const void* q) {
  const BlockQ3_NL* kb = static_cast<const BlockQ3_NL*>(k);
  const BlockQ8_0* qb = static_cast<const BlockQ8_0*>(q);
  const int64_t num_blocks = n / kLegacyBlockSize;
  __m512 acc = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= num_blocks; b += 2) {
    const __m512i kv = Concat(UnpackQ3_NL(kb[b]), UnpackQ3_NL(kb[b + 1]));
    const __m512i qv = Concat(Levels(qb[b]), Levels(qb[b + 1]));
    acc = _mm512_fmadd_ps(DotBytes512(kv, qv),
                          SplitScale(Scale(kb[b], qb[b]), Scale(kb[b + 1], qb[b + 1])), acc);
  }
  float sum = _mm512_reduce_add_ps(acc);
  if (b < num_blocks) {
    sum += Scale(kb[b], qb[b]) * HorizontalSum(DotBytes(UnpackQ3_NL(kb[b]), Levels(qb[b])));
  }
  return sum;
}

void AccumulateQ3_NL(int64_t n, const void* v, float weight, float* out) {
  const BlockQ3_NL* vb = static_cast<const BlockQ3_NL*>(v);
  const int64_t num_blocks = n / kLegacyBlockSize;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const __m256i levels = UnpackQ3_NL(vb[b]);
    const __m512 scale = _mm512_set1_ps(weight * HalfToFloatF16c(vb[b].d));
    float* o = out + b * kLegacyBlockSize;
    AccumulateBytes16(_mm256_castsi256_si128(levels), scale, o);
    AccumulateBytes16(_mm256_extracti128_si256(levels, 1), scale, o + 16);
  }
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ3_NL, Isa::kAvx512> kQ3_NLKvAvx512 = {
    .dot = kv_rows::avx512::DotQ3_NL,
    .accumulate = kv_rows::avx512::AccumulateQ3_NL,
};

}  // namespace kvmesh::kernels
