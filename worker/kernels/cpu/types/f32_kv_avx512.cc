// f32 KV rows, AVX-512 (tails by masked loads).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx512.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

struct F32 {
  using Element = float;
  static __m512 Load(const float* p) { return _mm512_loadu_ps(p); }
  static __m512 LoadTail(__mmask16 m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
};

float DotF32(int64_t n, const void* k, const void* q) { return DotFloatRow<F32>(n, k, q); }

void AccumulateF32(int64_t n, const void* v, float weight, float* out) {
  AccumulateFloatRow<F32>(n, v, weight, out);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kF32, Isa::kAvx512> kF32KvAvx512 = {
    .dot = kv_rows::avx512::DotF32,
    .accumulate = kv_rows::avx512::AccumulateF32,
};

}  // namespace kvmesh::kernels
