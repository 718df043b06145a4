// Q8_1: the activation type for Q4_1 / Q5_1 weights. Like Q8_0 (same scale
// and rounding, ggml's reference) plus s = d * sum(q) stored as f16, computed
// with the unrounded d. The weight's offset m then contributes m * s per block.
#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {

void DequantizeRowQ8_1(const void* src, float* dst, int64_t n) {
  const BlockQ8_1* blocks = static_cast<const BlockQ8_1*>(src);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kLegacyBlockSize;
    for (int j = 0; j < kLegacyBlockSize; ++j) y[j] = blocks[b].qs[j] * d;
  }
}

void QuantizeRowQ8_1(const float* src, void* dst, int64_t n) {
  BlockQ8_1* blocks = static_cast<BlockQ8_1*>(dst);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float* x = src + b * kLegacyBlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kLegacyBlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = FloatToHalf(d);
    int32_t level_sum = 0;
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      blocks[b].qs[j] = static_cast<int8_t>(std::round(x[j] * inv_d));
      level_sum += blocks[b].qs[j];
    }
    blocks[b].s = FloatToHalf(static_cast<float>(level_sum) * d);
  }
}

constinit const TypeRecord<TensorType::kQ8_1> kQ8_1Scalar = {
    .vec_dot_type = TensorType::kQ8_1,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockQ8_1),
    .to_float = DequantizeRowQ8_1,
    .from_float = QuantizeRowQ8_1,
};

}  // namespace kvmesh::kernels
