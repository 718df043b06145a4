// Q4_1: 32 elements as 4-bit levels above a per-block minimum m, with f16
// scale d: x = d * level + m. The quantizer is ggml's reference (d spans
// [min, max] in 15 steps). The dot product pairs with Q8_1, whose cached
// s = d_x * sum(q_x) makes the m term one multiply per block.
#include <algorithm>
#include <cfloat>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kHalf = kLegacyBlockSize / 2;

}  // namespace

void DequantizeRowQ4_1(const void* src, float* dst, int64_t n) {
  const BlockQ4_1* blocks = static_cast<const BlockQ4_1*>(src);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    const float m = HalfToFloat(blocks[b].m);
    float* y = dst + b * kLegacyBlockSize;
    for (int j = 0; j < kHalf; ++j) {
      y[j] = (blocks[b].qs[j] & 0x0F) * d + m;
      y[j + kHalf] = (blocks[b].qs[j] >> 4) * d + m;
    }
  }
}

void QuantizeRowQ4_1(const float* src, void* dst, int64_t n) {
  BlockQ4_1* blocks = static_cast<BlockQ4_1*>(dst);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float* x = src + b * kLegacyBlockSize;
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 15.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = FloatToHalf(d);
    blocks[b].m = FloatToHalf(min);
    for (int j = 0; j < kHalf; ++j) {
      // (x - min) * inv_d is in [0, 15], so truncating after + 0.5 rounds.
      const int lo = std::min(15, static_cast<int>((x[j] - min) * inv_d + 0.5f));
      const int hi = std::min(15, static_cast<int>((x[j + kHalf] - min) * inv_d + 0.5f));
      blocks[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

float VecDotQ4_1Q8_1(int64_t n, const void* w, const void* x) {
  const BlockQ4_1* wb = static_cast<const BlockQ4_1*>(w);
  const BlockQ8_1* xb = static_cast<const BlockQ8_1*>(x);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sumi = 0;
    for (int j = 0; j < kHalf; ++j) {
      sumi += (wb[b].qs[j] & 0x0F) * xb[b].qs[j];
      sumi += (wb[b].qs[j] >> 4) * xb[b].qs[j + kHalf];
    }
    sum += static_cast<float>(sumi) * (HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d)) +
           HalfToFloat(wb[b].m) * HalfToFloat(xb[b].s);
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ4_1> kQ4_1Scalar = {
    .vec_dot_type = TensorType::kQ8_1,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockQ4_1),
    .to_float = DequantizeRowQ4_1,
    .from_float = QuantizeRowQ4_1,
    .vec_dot = VecDotQ4_1Q8_1,
};

}  // namespace kvmesh::kernels
