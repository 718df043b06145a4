// q3_nl KV rows, AVX2 + FMA + F16C: codes unpack to their signed-byte levels, then the
// exact per-block integer dot product with the q8_0 query
// (kv_rows_quant_avx2.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx2.h"

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ3_NL, Isa::kAvx2> kQ3_NLKvAvx2 = {
    .dot = kv_rows::avx2::DotQuantRow<kv_rows::avx2::Q3_NLRows>,
    .accumulate = kv_rows::avx2::AccumulateQuantRow<kv_rows::avx2::Q3_NLRows>,
};

}  // namespace kvmesh::kernels
