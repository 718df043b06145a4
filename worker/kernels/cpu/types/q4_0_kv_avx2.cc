// q4_0 KV rows, AVX2 + FMA + F16C: nibbles unpack to signed bytes, then the
// exact per-block integer dot product with the q8_0 query
// (kv_rows_quant_avx2.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx2.h"

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ4_0, Isa::kAvx2> kQ4_0KvAvx2 = {
    .dot = kv_rows::avx2::DotQuantRow<kv_rows::avx2::Q4_0Rows>,
    .accumulate = kv_rows::avx2::AccumulateQuantRow<kv_rows::avx2::Q4_0Rows>,
};

}  // namespace kvmesh::kernels
