// f32 KV rows, AVX2 + FMA.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx2.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

float DotF32(int64_t n, const void* k, const void* q) { return DotFloatRow<F32>(n, k, q); }

void AccumulateF32(int64_t n, const void* v, float weight, float* out) {
  AccumulateFloatRow<F32>(n, v, weight, out);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kF32, Isa::kAvx2> kF32KvAvx2 = {
    .dot = kv_rows::avx2::DotF32,
    .accumulate = kv_rows::avx2::AccumulateF32,
};

}  // namespace kvmesh::kernels
