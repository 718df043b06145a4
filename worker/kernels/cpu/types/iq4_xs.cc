// IQ4_XS: 256-element super-blocks of eight 32-element sub-blocks with a
// signed 6-bit scale each under one f16 super-scale, and IQ4_NL's 4-bit codes:
// x = d * (scale_j - 32) * kIq4Values[code]. Dot products pair with Q8_K.
#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kSubBlockSize = 32;
constexpr int kSubBlocks = kSuperBlockSize / kSubBlockSize;
constexpr int kScaleOffset = 32;  // signed scales -32..31

int Code(const BlockIQ4_XS& block, int e) {
  const uint8_t byte = block.qs[16 * (e / 32) + e % 16];
  return e % 32 < 16 ? byte & 0x0F : byte >> 4;
}

int Scale(const BlockIQ4_XS& block, int j) {
  const int low = (block.scales_l[j / 2] >> (4 * (j % 2))) & 0x0F;
  const int high = (block.scales_h >> (2 * j)) & 3;
  return (low | high << 4) - kScaleOffset;
}

// Codes and weighted error of sub-block x under the step d * scale, computed
// as the kernels dequantize.
double QuantizeSubBlock(const float* x, const float* weights, float d, int scale, uint8_t* codes) {
  const float step = d * static_cast<float>(scale);
  const int zero = NearestIq4Code(0.0f);
  double error = 0.0;
  for (int i = 0; i < kSubBlockSize; ++i) {
    codes[i] = static_cast<uint8_t>(step != 0.0f ? NearestIq4Code(x[i] / step) : zero);
    const double diff = static_cast<double>(step * static_cast<float>(kIq4Values[codes[i]])) - x[i];
    error += weights[i] * diff * diff;
  }
  return error;
}

void QuantizeBlock(const float* x, BlockIQ4_XS* block) {
  float weights[kSubBlocks][kSubBlockSize];
  float scales[kSubBlocks];
  uint8_t codes[kSuperBlockSize];
  float max_scale = 0.0f;  // signed scale of largest magnitude
  for (int j = 0; j < kSubBlocks; ++j) {
    const float* sub = x + kSubBlockSize * j;
    MagnitudeWeights(sub, kSubBlockSize, weights[j]);
    scales[j] = FitIq4Group(sub, weights[j], kSubBlockSize, codes + kSubBlockSize * j);
    if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
  }
  int chosen[kSubBlocks] = {};
  block->d = 0;
  std::fill(codes, codes + kSuperBlockSize, static_cast<uint8_t>(NearestIq4Code(0.0f)));
  if (max_scale != 0.0f) {
    // Map the largest sub-scale to -32, the wide end of the 6-bit range.
    const float inv_scale = -32.0f / max_scale;
    block->d = FloatToHalf(1.0f / inv_scale);
    const float d = HalfToFloat(block->d);
    uint8_t trial[kSubBlockSize];
    for (int j = 0; j < kSubBlocks; ++j) {
      // A sub-block of zeros keeps scale 0 (and decodes to zeros): every
      // candidate would tie at zero error, and a nonzero scale times the
      // code nearest 0 (value 1) is not 0.
      if (scales[j] == 0.0f) continue;
      const int rounded = std::clamp(NearestInt(inv_scale * scales[j]), -32, 31);
      double best_error = -1.0;
      for (int s = std::max(-32, rounded - 1); s <= std::min(31, rounded + 1); ++s) {
        const double error = QuantizeSubBlock(x + kSubBlockSize * j, weights[j], d, s, trial);
        if (best_error < 0.0 || error < best_error) {
          best_error = error;
          chosen[j] = s;
          std::copy(trial, trial + kSubBlockSize, codes + kSubBlockSize * j);
        }
      }
    }
  }
  block->scales_h = 0;
  for (int k = 0; k < kSubBlocks / 2; ++k) block->scales_l[k] = 0;
  for (int j = 0; j < kSubBlocks; ++j) {
    const int code = chosen[j] + kScaleOffset;
    block->scales_l[j / 2] |= static_cast<uint8_t>((code & 0x0F) << (4 * (j % 2)));
    block->scales_h |= static_cast<uint16_t>((code >> 4) << (2 * j));
    const uint8_t* c = codes + kSubBlockSize * j;
    for (int l = 0; l < 16; ++l)
      block->qs[16 * j + l] = static_cast<uint8_t>(c[l] | c[l + 16] << 4);
  }
}

}  // namespace

void DequantizeRowIQ4_XS(const void* src, float* dst, int64_t n) {
  const BlockIQ4_XS* blocks = static_cast<const BlockIQ4_XS*>(src);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kSuperBlockSize;
    for (int j = 0; j < kSubBlocks; ++j) {
      const float step = d * static_cast<float>(Scale(blocks[b], j));
      for (int l = 0; l < kSubBlockSize; ++l) {
        const int e = kSubBlockSize * j + l;
        y[e] = step * static_cast<float>(kIq4Values[Code(blocks[b], e)]);
      }
    }
  }
}

void QuantizeRowIQ4_XS(const float* src, void* dst, int64_t n) {
  BlockIQ4_XS* blocks = static_cast<BlockIQ4_XS*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kSuperBlockSize, &blocks[b]);
}

float VecDotIQ4_XSQ8_K(int64_t n, const void* w, const void* x) {
  const BlockIQ4_XS* wb = static_cast<const BlockIQ4_XS*>(w);
  const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(x);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t scaled_sum = 0;  // sum_j scale_j * sum_l value * q
    for (int j = 0; j < kSubBlocks; ++j) {
      int32_t sub_sum = 0;
      for (int l = 0; l < kSubBlockSize; ++l) {
        const int e = kSubBlockSize * j + l;
        sub_sum += kIq4Values[Code(wb[b], e)] * xb[b].qs[e];
      }
      scaled_sum += Scale(wb[b], j) * sub_sum;
    }
    sum += HalfToFloat(wb[b].d) * xb[b].d * static_cast<float>(scaled_sum);
  }
  return sum;
}

constinit const TypeRecord<TensorType::kIQ4_XS> kIQ4_XSScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockIQ4_XS),
    .to_float = DequantizeRowIQ4_XS,
    .from_float = QuantizeRowIQ4_XS,
    .vec_dot = VecDotIQ4_XSQ8_K,
};

}  // namespace kvmesh::kernels
