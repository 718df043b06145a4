// q8_0 KV rows, AVX2 + FMA + F16C: per 32-value block an exact integer dot
// product, scaled by the two blocks' f16 scales (kv_rows_quant_avx2.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx2.h"

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ8_0, Isa::kAvx2> kQ8_0KvAvx2 = {
    .dot = kv_rows::avx2::DotQuantRow<kv_rows::avx2::Q8_0Rows>,
    .accumulate = kv_rows::avx2::AccumulateQuantRow<kv_rows::avx2::Q8_0Rows>,
};

}  // namespace kvmesh::kernels
