// f16 KV rows, AVX-512: halves widen to floats (exactly), products and sums
// are in float; tails by masked loads.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx512.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

float DotF16(int64_t n, const void* k, const void* q) { return DotFloatRow<F16>(n, k, q); }

void AccumulateF16(int64_t n, const void* v, float weight, float* out) {
  AccumulateFloatRow<F16>(n, v, weight, out);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kF16, Isa::kAvx512> kF16KvAvx512 = {
    .dot = kv_rows::avx512::DotF16,
    .accumulate = kv_rows::avx512::AccumulateF16,
};

}  // namespace kvmesh::kernels
