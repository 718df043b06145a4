// q3_nl KV rows, AVX-512: codes unpacked to their signed-byte levels, two
// blocks per 512-bit step, each an exact integer dot product with the q8_0
// query (kv_rows_quant_avx512.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx512.h"

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kQ3_NL, Isa::kAvx512> kQ3_NLKvAvx512 = {
    .dot = kv_rows::avx512::DotQuantRow<kv_rows::avx512::Q3_NLRows>,
    .accumulate = kv_rows::avx512::AccumulateQuantRow<kv_rows::avx512::Q3_NLRows>,
};

}  // namespace kvmesh::kernels
