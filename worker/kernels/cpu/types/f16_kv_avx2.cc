// f16 KV rows, AVX2 + FMA + F16C: halves widen to floats (exactly), products
// and sums are in float.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx2.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

float DotF16(int64_t n, const void* k, const void* q) { return DotFloatRow<F16>(n, k, q); }

void AccumulateF16(int64_t n, const void* v, float weight, float* out) {
  AccumulateFloatRow<F16>(n, v, weight, out);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kF16, Isa::kAvx2> kF16KvAvx2 = {
    .dot = kv_rows::avx2::DotF16,
    .accumulate = kv_rows::avx2::AccumulateF16,
};

}  // namespace kvmesh::kernels
