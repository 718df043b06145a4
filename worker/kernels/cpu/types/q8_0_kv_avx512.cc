// q8_0 KV rows, AVX-512: two 32-value blocks per 512-bit step, each an exact
// integer dot product scaled by its pair of f16 scales (kv_rows_quant_avx512.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx512.h"

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ8_0, Isa::kAvx512> kQ8_0KvAvx512 = {
    .dot = kv_rows::avx512::DotQuantRow<kv_rows::avx512::Q8_0Rows>,
    .accumulate = kv_rows::avx512::AccumulateQuantRow<kv_rows::avx512::Q8_0Rows>,
};

}  // namespace kvmesh::kernels
