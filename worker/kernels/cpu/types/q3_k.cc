// Q3_K: 256-element super-blocks of sixteen 16-element sub-blocks, each with
// a signed 6-bit scale under one f16 super-scale: x = d*(scale_j - 32)*(level
// - 4), level in 0..7. Dot products pair with Q8_K.
#include <cstring>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kSubBlockSize = 16;
constexpr int kSubBlocks = kSuperBlockSize / kSubBlockSize;
constexpr int kHalfRange = 4;     // signed levels -4..3
constexpr int kScaleOffset = 32;  // signed scales -32..31

// Level (0..7) of element e (block_types.h).
int Level(const BlockQ3_K& block, int e) {
  const int half = e / 128;
  const int quarter = (e % 128) / 32;
  const int l = e % 32;
  const int low = (block.qs[32 * half + l] >> (2 * quarter)) & 3;
  const int high = (block.hmask[l] >> (4 * half + quarter)) & 1;
  return low | high << 2;
}

// Signed scale (-32..31) of sub-block j.
int Scale(const BlockQ3_K& block, int j) {
  const int low = j < 8 ? block.scales[j] & 0x0F : block.scales[j - 8] >> 4;
  const int high = (block.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | high << 4) - kScaleOffset;
}

void SetScale(BlockQ3_K* block, int j, int scale) {
  const int code = scale + kScaleOffset;
  if (j < 8) {
    block->scales[j] = static_cast<uint8_t>((block->scales[j] & 0xF0) | (code & 0x0F));
  } else {
    block->scales[j - 8] = static_cast<uint8_t>((block->scales[j - 8] & 0x0F) | (code & 0x0F) << 4);
  }
  uint8_t& top = block->scales[8 + j % 4];
  const int shift = 2 * (j / 4);
  top = static_cast<uint8_t>((top & ~(3 << shift)) | (code >> 4) << shift);
}

void QuantizeBlock(const float* x, BlockQ3_K* block) {
  SymmetricSuperBlock fit;
  QuantizeSymmetricSuperBlock(x, kHalfRange, /*scale_range=*/32, &fit);
  std::memset(block, 0, sizeof(*block));
  block->d = fit.d;
  for (int j = 0; j < kSubBlocks; ++j) SetScale(block, j, fit.scales[j]);
  const uint8_t* levels = fit.levels;
  for (int e = 0; e < kSuperBlockSize; ++e) {
    const int half = e / 128;
    const int quarter = (e % 128) / 32;
    const int l = e % 32;
    block->qs[32 * half + l] |= static_cast<uint8_t>((levels[e] & 3) << (2 * quarter));
    block->hmask[l] |= static_cast<uint8_t>((levels[e] >> 2) << (4 * half + quarter));
  }
}

}  // namespace

void DequantizeRowQ3_K(const void* src, float* dst, int64_t n) {
  const BlockQ3_K* blocks = static_cast<const BlockQ3_K*>(src);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kSuperBlockSize;
    for (int j = 0; j < kSubBlocks; ++j) {
      const float sub_scale = d * static_cast<float>(Scale(blocks[b], j));
      for (int l = 0; l < kSubBlockSize; ++l) {
        const int e = kSubBlockSize * j + l;
        y[e] = sub_scale * static_cast<float>(Level(blocks[b], e) - kHalfRange);
      }
    }
  }
}

void QuantizeRowQ3_K(const float* src, void* dst, int64_t n) {
  BlockQ3_K* blocks = static_cast<BlockQ3_K*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kSuperBlockSize, &blocks[b]);
}

float VecDotQ3_KQ8_K(int64_t n, const void* w, const void* x) {
  const BlockQ3_K* wb = static_cast<const BlockQ3_K*>(w);
  const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(x);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t scaled_sum = 0;  // sum_j scale_j * sum_l (level - 4) * q
    for (int j = 0; j < kSubBlocks; ++j) {
      int32_t sub_sum = 0;
      for (int l = 0; l < kSubBlockSize; ++l) {
        const int e = kSubBlockSize * j + l;
        sub_sum += (Level(wb[b], e) - kHalfRange) * xb[b].qs[e];
      }
      scaled_sum += Scale(wb[b], j) * sub_sum;
    }
    sum += HalfToFloat(wb[b].d) * xb[b].d * static_cast<float>(scaled_sum);
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ3_K> kQ3_KScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockQ3_K),
    .to_float = DequantizeRowQ3_K,
    .from_float = QuantizeRowQ3_K,
    .vec_dot = VecDotQ3_KQ8_K,
};

}  // namespace kvmesh::kernels
