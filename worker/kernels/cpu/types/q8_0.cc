// Q8_0: 32 int8 levels per block with one f16 scale. Used both as a weight
// type and as the activation type for Q4_0 / Q5_0 / Q8_0 weights.
//
// The quantizer is ggml's reference: d = amax / 127 is stored as f16, but the
// levels are computed with the unrounded d (q = roundf(x / d), halves away
// from zero), so activations round exactly as llama.cpp's do.
#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {

void DequantizeRowQ8_0(const void* src, float* dst, int64_t n) {
  const BlockQ8_0* blocks = static_cast<const BlockQ8_0*>(src);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kLegacyBlockSize;
    for (int j = 0; j < kLegacyBlockSize; ++j) y[j] = blocks[b].qs[j] * d;
  }
}

void QuantizeRowQ8_0(const float* src, void* dst, int64_t n) {
  BlockQ8_0* blocks = static_cast<BlockQ8_0*>(dst);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float* x = src + b * kLegacyBlockSize;
    float amax = 0.0f;
    for (int j = 0; j < kLegacyBlockSize; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = FloatToHalf(d);
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      blocks[b].qs[j] = static_cast<int8_t>(std::round(x[j] * inv_d));
    }
  }
}

float VecDotQ8_0Q8_0(int64_t n, const void* w, const void* x) {
  const BlockQ8_0* wb = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(x);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sumi = 0;
    for (int j = 0; j < kLegacyBlockSize; ++j) sumi += wb[b].qs[j] * xb[b].qs[j];
    sum += static_cast<float>(sumi) * (HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d));
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ8_0> kQ8_0Scalar = {
    .vec_dot_type = TensorType::kQ8_0,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockQ8_0),
    .to_float = DequantizeRowQ8_0,
    .from_float = QuantizeRowQ8_0,
    .vec_dot = VecDotQ8_0Q8_0,
};

}  // namespace kvmesh::kernels
