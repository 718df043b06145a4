// q4_0 KV rows, AVX2 + FMA + F16C, a block of positions at a time: the row
// kernels' floats bit for bit (kv_rows_quant_avx2.h), each row unpacked once
// for up to eight query heads.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_quant_avx2.h"

namespace kvmesh::kernels {

constinit const KvBlockRecord<TensorType::kQ4_0, Isa::kAvx2> kQ4_0KvBlocksAvx2 = {
    .scores = kv_rows::avx2::QuantScores<kv_rows::avx2::Q4_0Rows>,
    .weighted_sum = kv_rows::avx2::QuantWeightedSum<kv_rows::avx2::Q4_0Rows>,
};

}  // namespace kvmesh::kernels
