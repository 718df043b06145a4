// IQ4_NL: blocks of 32 with one f16 scale and a 4-bit code per element that
// picks one of 16 non-uniform values: x = d * kIq4Values[code]. Dot products
// pair with Q8_0.
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kHalf = kLegacyBlockSize / 2;

int Code(const BlockIQ4_NL& block, int j) {
  return j < kHalf ? block.qs[j] & 0x0F : block.qs[j - kHalf] >> 4;
}

}  // namespace

void DequantizeRowIQ4_NL(const void* src, float* dst, int64_t n) {
  const BlockIQ4_NL* blocks = static_cast<const BlockIQ4_NL*>(src);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    for (int j = 0; j < kLegacyBlockSize; ++j) {
      dst[b * kLegacyBlockSize + j] = d * kIq4Values[Code(blocks[b], j)];
    }
  }
}

void QuantizeRowIQ4_NL(const float* src, void* dst, int64_t n) {
  BlockIQ4_NL* blocks = static_cast<BlockIQ4_NL*>(dst);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float* x = src + b * kLegacyBlockSize;
    float weights[kLegacyBlockSize];
    uint8_t codes[kLegacyBlockSize];
    MagnitudeWeights(x, kLegacyBlockSize, weights);
    blocks[b].d = FloatToHalf(FitIq4Group(x, weights, kLegacyBlockSize, codes));
    // The codes again for the scale as stored.
    const float d = HalfToFloat(blocks[b].d);
    if (d != 0.0f) {
      for (int j = 0; j < kLegacyBlockSize; ++j) {
        codes[j] = static_cast<uint8_t>(NearestIq4Code(x[j] / d));
      }
    }
    for (int j = 0; j < kHalf; ++j) {
      blocks[b].qs[j] = static_cast<uint8_t>(codes[j] | codes[j + kHalf] << 4);
    }
  }
}

float VecDotIQ4_NLQ8_0(int64_t n, const void* w, const void* x) {
  const BlockIQ4_NL* wb = static_cast<const BlockIQ4_NL*>(w);
  const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(x);
  const int64_t num_blocks = NumBlocks(n, kLegacyBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sumi = 0;
    for (int j = 0; j < kLegacyBlockSize; ++j) sumi += kIq4Values[Code(wb[b], j)] * xb[b].qs[j];
    sum += static_cast<float>(sumi) * (HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d));
  }
  return sum;
}

constinit const TypeRecord<TensorType::kIQ4_NL> kIQ4_NLScalar = {
    .vec_dot_type = TensorType::kQ8_0,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockIQ4_NL),
    .to_float = DequantizeRowIQ4_NL,
    .from_float = QuantizeRowIQ4_NL,
    .vec_dot = VecDotIQ4_NLQ8_0,
};

}  // namespace kvmesh::kernels
