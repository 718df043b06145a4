// Q5_1: 32 elements as 5-bit levels above a per-block minimum m, with f16
// scale d: x = d * level + m. Bit layout as Q5_0; quantizer is ggml's
// reference (d spans [min, max] in 31 steps). Pairs with Q8_1 like Q4_1.
#include <algorithm>
#include <cfloat>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kHalf = kLegacyBlockSize / 2;

uint32_t LoadHighBits(const uint8_t qh[4]) {
  return static_cast<uint32_t>(qh[0]) | static_cast<uint32_t>(qh[1]) << 8 |
         static_cast<uint32_t>(qh[2]) << 16 | static_cast<uint32_t>(qh[3]) << 24;
}

// Level (0..31) of element j of a block.
int Level(const BlockQ5_1& block, uint32_t high_bits, int j) {
  const int nibble = j < kHalf ? block.qs[j] & 0x0F : block.qs[j - kHalf] >> 4;
  return nibble | static_cast<int>((high_bits >> j) & 1u) << 4;
}

}  // namespace

void DequantizeRowQ5_1(const void* src, float* dst, int64_t n) {
  const BlockQ5_1* blocks = static_cast<const BlockQ5_1*>(src);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    const float m = HalfToFloat(blocks[b].m);
    const uint32_t high_bits = LoadHighBits(blocks[b].qh);
    float* y = dst + b * kLegacyBlockSize;
    for (int j = 0; j < kLegacyBlockSize; ++j) y[j] = Level(blocks[b], high_bits, j) * d + m;
  }
}

void QuantizeRowQ5_1(const float* src, void* dst, int64_t n) {
  BlockQ5_1* blocks = static_cast<BlockQ5_1*>(dst);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float* x = src + b * kLegacyBlockSize;
    float min = FLT_MAX;
    float max = -FLT_MAX;
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      min = std::min(min, x[j]);
      max = std::max(max, x[j]);
    }
    const float d = (max - min) / 31.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = FloatToHalf(d);
    blocks[b].m = FloatToHalf(min);
    uint32_t high_bits = 0;
    for (int j = 0; j < kHalf; ++j) {
      // (x - min) * inv_d is in [0, 31], so truncating after + 0.5 rounds.
      const int lo = std::min(31, static_cast<int>((x[j] - min) * inv_d + 0.5f));
      const int hi = std::min(31, static_cast<int>((x[j + kHalf] - min) * inv_d + 0.5f));
      blocks[b].qs[j] = static_cast<uint8_t>((lo & 0x0F) | (hi & 0x0F) << 4);
      high_bits |= static_cast<uint32_t>(lo >> 4) << j;
      high_bits |= static_cast<uint32_t>(hi >> 4) << (j + kHalf);
    }
    for (int k = 0; k < 4; ++k) blocks[b].qh[k] = static_cast<uint8_t>(high_bits >> (8 * k));
  }
}

float VecDotQ5_1Q8_1(int64_t n, const void* w, const void* x) {
  const BlockQ5_1* wb = static_cast<const BlockQ5_1*>(w);
  const BlockQ8_1* xb = static_cast<const BlockQ8_1*>(x);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint32_t high_bits = LoadHighBits(wb[b].qh);
    int32_t sumi = 0;
    for (int j = 0; j < kLegacyBlockSize; ++j) sumi += Level(wb[b], high_bits, j) * xb[b].qs[j];
    sum += static_cast<float>(sumi) * (HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d)) +
           HalfToFloat(wb[b].m) * HalfToFloat(xb[b].s);
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ5_1> kQ5_1Scalar = {
    .vec_dot_type = TensorType::kQ8_1,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockQ5_1),
    .to_float = DequantizeRowQ5_1,
    .from_float = QuantizeRowQ5_1,
    .vec_dot = VecDotQ5_1Q8_1,
};

}  // namespace kvmesh::kernels
