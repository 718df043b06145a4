// Q8_K: the activation type for the K weight types. 256 int8 levels with a
// float scale and per-16 level sums (bsums). The quantizer is ggml's
// reference: the value of largest magnitude maps to -127 (so d = -max / 127
// has the opposite sign of that value), levels round half to even.
#include <algorithm>
#include <cmath>
#include <iterator>

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {

void DequantizeRowQ8_K(const void* src, float* dst, int64_t n) {
  const BlockQ8_K* blocks = static_cast<const BlockQ8_K*>(src);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    float* y = dst + b * kSuperBlockSize;
    for (int j = 0; j < kSuperBlockSize; ++j) y[j] = blocks[b].d * blocks[b].qs[j];
  }
}

void QuantizeRowQ8_K(const float* src, void* dst, int64_t n) {
  BlockQ8_K* blocks = static_cast<BlockQ8_K*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float* x = src + b * kSuperBlockSize;
    BlockQ8_K& block = blocks[b];
    float amax = 0.0f;
    float max = 0.0f;  // signed value of largest magnitude (first one wins)
    for (int j = 0; j < kSuperBlockSize; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    if (amax == 0.0f) {
      block.d = 0.0f;
      std::fill(std::begin(block.qs), std::end(block.qs), int8_t{0});
      std::fill(std::begin(block.bsums), std::end(block.bsums), int16_t{0});
      continue;
    }
    const float inv_scale = -127.0f / max;
    for (int j = 0; j < kSuperBlockSize; ++j) {
      block.qs[j] = static_cast<int8_t>(std::min(127, NearestInt(inv_scale * x[j])));
    }
    for (int g = 0; g < kSuperBlockSize / 16; ++g) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) sum += block.qs[16 * g + l];
      block.bsums[g] = static_cast<int16_t>(sum);
    }
    block.d = 1.0f / inv_scale;
  }
}

constinit const TypeRecord<TensorType::kQ8_K> kQ8_KScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockQ8_K),
    .to_float = DequantizeRowQ8_K,
    .from_float = QuantizeRowQ8_K,
};

}  // namespace kvmesh::kernels
