// bf16 KV rows, AVX-512: widening is a 16-bit shift; products and sums are in
// float; tails by masked loads.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx512.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

float DotBf16(int64_t n, const void* k, const void* q) { return DotFloatRow<Bf16>(n, k, q); }

void AccumulateBf16(int64_t n, const void* v, float weight, float* out) {
  AccumulateFloatRow<Bf16>(n, v, weight, out);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kBF16, Isa::kAvx512> kBF16KvAvx512 = {
    .dot = kv_rows::avx512::DotBf16,
    .accumulate = kv_rows::avx512::AccumulateBf16,
};

}  // namespace kvmesh::kernels
