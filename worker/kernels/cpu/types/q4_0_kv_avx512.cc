// q4_0 KV rows, AVX-512: nibbles unpacked to signed bytes, two blocks per
// 512-bit step, each an exact integer dot product with the q8_0 query
// (kv_rows_quant_avx512.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx512.h"

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ4_0, Isa::kAvx512> kQ4_0KvAvx512 = {
    .dot = kv_rows::avx512::DotQuantRow<kv_rows::avx512::Q4_0Rows>,
    .accumulate = kv_rows::avx512::AccumulateQuantRow<kv_rows::avx512::Q4_0Rows>,
};

}  // namespace kvmesh::kernels
