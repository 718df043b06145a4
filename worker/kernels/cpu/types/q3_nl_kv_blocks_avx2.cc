// q3_nl KV rows, AVX2 + FMA + F16C, a block of positions at a time: the row
// kernels' floats bit for bit (kv_rows_quant_avx2.h), each row unpacked once
// for up to eight query heads.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx2.h"

namespace kvmesh::kernels {

constinit const KvBlockRecord<TensorType::kQ3_NL, Isa::kAvx2> kQ3_NLKvBlocksAvx2 = {
    .scores = kv_rows::avx2::QuantScores<kv_rows::avx2::Q3_NLRows>,
    .weighted_sum = kv_rows::avx2::QuantWeightedSum<kv_rows::avx2::Q3_NLRows>,
};

}  // namespace kvmesh::kernels
