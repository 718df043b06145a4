// Q5_0: 32 elements as 5-bit levels around 16 with one f16 scale. Low four
// bits as in Q4_0; the fifth bits sit in a 32-bit little-endian mask. The
// quantizer is ggml's reference: the element of largest magnitude maps to
// level 0, so d = max / -16.
#include <algorithm>
#include <cmath>

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
int Level(const BlockQ5_0& block, uint32_t high_bits, int j) {
  const int nibble = j < kHalf ? block.qs[j] & 0x0F : block.qs[j - kHalf] >> 4;
  return nibble | static_cast<int>((high_bits >> j) & 1u) << 4;
}

}  // namespace

void DequantizeRowQ5_0(const void* src, float* dst, int64_t n) {
  const BlockQ5_0* blocks = static_cast<const BlockQ5_0*>(src);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    const uint32_t high_bits = LoadHighBits(blocks[b].qh);
    float* y = dst + b * kLegacyBlockSize;
    for (int j = 0; j < kLegacyBlockSize; ++j) y[j] = (Level(blocks[b], high_bits, j) - 16) * d;
  }
}

void QuantizeRowQ5_0(const float* src, void* dst, int64_t n) {
  BlockQ5_0* blocks = static_cast<BlockQ5_0*>(dst);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float* x = src + b * kLegacyBlockSize;
    float amax = 0.0f;
    float max = 0.0f;  // the signed value of largest magnitude (first one wins)
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = FloatToHalf(d);
    uint32_t high_bits = 0;
    for (int j = 0; j < kHalf; ++j) {
      // |x * inv_d| <= 16, so truncating after + 16.5 rounds to nearest.
      const int lo = std::min(31, static_cast<int>(x[j] * inv_d + 16.5f));
      const int hi = std::min(31, static_cast<int>(x[j + kHalf] * inv_d + 16.5f));
      blocks[b].qs[j] = static_cast<uint8_t>((lo & 0x0F) | (hi & 0x0F) << 4);
      high_bits |= static_cast<uint32_t>(lo >> 4) << j;
      high_bits |= static_cast<uint32_t>(hi >> 4) << (j + kHalf);
    }
    for (int k = 0; k < 4; ++k) blocks[b].qh[k] = static_cast<uint8_t>(high_bits >> (8 * k));
  }
}

float VecDotQ5_0Q8_0(int64_t n, const void* w, const void* x) {
  const BlockQ5_0* wb = static_cast<const BlockQ5_0*>(w);
  const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(x);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    const uint32_t high_bits = LoadHighBits(wb[b].qh);
    int32_t sumi = 0;
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      sumi += (Level(wb[b], high_bits, j) - 16) * xb[b].qs[j];
    }
    sum += static_cast<float>(sumi) * (HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d));
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ5_0> kQ5_0Scalar = {
    .vec_dot_type = TensorType::kQ8_0,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockQ5_0),
    .to_float = DequantizeRowQ5_0,
    .from_float = QuantizeRowQ5_0,
    .vec_dot = VecDotQ5_0Q8_0,
};

}  // namespace kvmesh::kernels
