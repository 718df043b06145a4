// bf16 KV rows, AVX2 + FMA: a bf16 is the top half of an f32, so widening is a
// 16-bit shift; products and sums are in float.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx2.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

float DotBf16(int64_t n, const void* k, const void* q) { return DotFloatRow<Bf16>(n, k, q); }

void AccumulateBf16(int64_t n, const void* v, float weight, float* out) {
  AccumulateFloatRow<Bf16>(n, v, weight, out);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kBF16, Isa::kAvx2> kBF16KvAvx2 = {
    .dot = kv_rows::avx2::DotBf16,
    .accumulate = kv_rows::avx2::AccumulateBf16,
};

}  // namespace kvmesh::kernels
