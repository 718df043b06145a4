// f16 KV rows, AVX-512: attention a block of 16 positions at a time, the
// row kernels' floats bit for bit (kv_blocks_float_avx512.h).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_blocks_float_avx512.h"

namespace kvmesh::kernels {

constinit const KvBlockRecord<TensorType::kF16, Isa::kAvx512> kF16KvBlocksAvx512 = {
    .scores = kv_rows::avx512::FloatScores<kv_rows::avx512::F16>,
    .weighted_sum = kv_rows::avx512::FloatWeightedSum<kv_rows::avx512::F16>,
};

}  // namespace kvmesh::kernels
