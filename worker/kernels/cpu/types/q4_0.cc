// Q4_0: 32 elements as 4-bit levels around 8, one f16 scale. The quantizer is
// ggml's reference: the element of largest magnitude maps to level 0 (value
// -8d, the wide end of the asymmetric range -8..7), so d = max / -8.
#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kHalf = kLegacyBlockSize / 2;

}  // namespace

void DequantizeRowQ4_0(const void* src, float* dst, int64_t n) {
  const BlockQ4_0* blocks = static_cast<const BlockQ4_0*>(src);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kLegacyBlockSize;
    for (int j = 0; j < kHalf; ++j) {
      y[j] = ((blocks[b].qs[j] & 0x0F) - 8) * d;
      y[j + kHalf] = ((blocks[b].qs[j] >> 4) - 8) * d;
    }
  }
}

void QuantizeRowQ4_0(const float* src, void* dst, int64_t n) {
  BlockQ4_0* blocks = static_cast<BlockQ4_0*>(dst);
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
    const float d = max / -8.0f;
    const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
    blocks[b].d = FloatToHalf(d);
    for (int j = 0; j < kHalf; ++j) {
      // Truncation of (v + 8.5) rounds v to nearest for v >= -8.5, which
      // holds since |x * inv_d| <= 8.
      const int lo = std::min(15, static_cast<int>(x[j] * inv_d + 8.5f));
      const int hi = std::min(15, static_cast<int>(x[j + kHalf] * inv_d + 8.5f));
      blocks[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

float VecDotQ4_0Q8_0(int64_t n, const void* w, const void* x) {
  const BlockQ4_0* wb = static_cast<const BlockQ4_0*>(w);
  const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(x);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sumi = 0;
    for (int j = 0; j < kHalf; ++j) {
      sumi += ((wb[b].qs[j] & 0x0F) - 8) * xb[b].qs[j];
      sumi += ((wb[b].qs[j] >> 4) - 8) * xb[b].qs[j + kHalf];
    }
    sum += static_cast<float>(sumi) * (HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d));
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ4_0> kQ4_0Scalar = {
    .vec_dot_type = TensorType::kQ8_0,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockQ4_0),
    .to_float = DequantizeRowQ4_0,
    .from_float = QuantizeRowQ4_0,
    .vec_dot = VecDotQ4_0Q8_0,
};

}  // namespace kvmesh::kernels
