// f16 KV rows, AVX2 + FMA: attention a block of 8 positions at a time, the
// row kernels' floats bit for bit (kv_blocks_float_avx2.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_blocks_float_avx2.h"

namespace kvmesh::kernels {

constinit const KvBlockRecord<TensorType::kF16, Isa::kAvx2> kF16KvBlocksAvx2 = {
    .scores = kv_rows::avx2::FloatScores<kv_rows::avx2::F16>,
    .weighted_sum = kv_rows::avx2::FloatWeightedSum<kv_rows::avx2::F16>,
};

}  // namespace kvmesh::kernels
