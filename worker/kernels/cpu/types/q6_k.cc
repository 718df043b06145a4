// Q6_K: 256-element super-blocks of sixteen 16-element sub-blocks, each with
// a signed 8-bit scale under one f16 super-scale: x = d*scale_j*(level - 32),
// level in 0..63. Dot products pair with Q8_K.
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
constexpr int kHalfRange = 32;  // signed levels -32..31

// Level (0..63) of element e. Each 128-element half h splits into quarters
// q = 0..3 of 32; quarter q takes its low four bits from ql[64h + 32(q%2) + l]
// (low nibble for q < 2, high for q >= 2) and its top two bits from bits 2q,
// 2q+1 of qh[32h + l].
int Level(const BlockQ6_K& block, int e) {
  const int half = e / 128;
  const int quarter = (e % 128) / 32;
  const int l = e % 32;
  const uint8_t low_byte = block.ql[64 * half + 32 * (quarter % 2) + l];
  const int low = quarter < 2 ? low_byte & 0x0F : low_byte >> 4;
  const int high = (block.qh[32 * half + l] >> (2 * quarter)) & 3;
  return low | high << 4;
}

void QuantizeBlock(const float* x, BlockQ6_K* block) {
  SymmetricSuperBlock fit;
  QuantizeSymmetricSuperBlock(x, kHalfRange, /*scale_range=*/128, &fit);
  std::memset(block, 0, sizeof(*block));
  block->d = fit.d;
  for (int j = 0; j < kSubBlocks; ++j) block->scales[j] = static_cast<int8_t>(fit.scales[j]);
  const uint8_t* levels = fit.levels;
  for (int half = 0; half < 2; ++half) {
    const uint8_t* hl = levels + 128 * half;
    for (int l = 0; l < 32; ++l) {
      block->ql[64 * half + l] = static_cast<uint8_t>((hl[l] & 0x0F) | (hl[l + 64] & 0x0F) << 4);
      block->ql[64 * half + 32 + l] =
          static_cast<uint8_t>((hl[l + 32] & 0x0F) | (hl[l + 96] & 0x0F) << 4);
      block->qh[32 * half + l] = static_cast<uint8_t>(
          (hl[l] >> 4) | (hl[l + 32] >> 4) << 2 | (hl[l + 64] >> 4) << 4 | (hl[l + 96] >> 4) << 6);
    }
  }
}

}  // namespace

void DequantizeRowQ6_K(const void* src, float* dst, int64_t n) {
  const BlockQ6_K* blocks = static_cast<const BlockQ6_K*>(src);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kSuperBlockSize;
    for (int e = 0; e < kSuperBlockSize; ++e) {
      y[e] = d * blocks[b].scales[e / kSubBlockSize] * (Level(blocks[b], e) - kHalfRange);
    }
  }
}

void QuantizeRowQ6_K(const float* src, void* dst, int64_t n) {
  BlockQ6_K* blocks = static_cast<BlockQ6_K*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kSuperBlockSize, &blocks[b]);
}

float VecDotQ6_KQ8_K(int64_t n, const void* w, const void* x) {
  const BlockQ6_K* wb = static_cast<const BlockQ6_K*>(w);
  const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(x);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t scaled_sum = 0;  // sum_j scale_j * sum_l (level - 32) * q
    for (int j = 0; j < kSubBlocks; ++j) {
      int32_t sub_sum = 0;
      for (int l = 0; l < kSubBlockSize; ++l) {
        const int e = kSubBlockSize * j + l;
        sub_sum += (Level(wb[b], e) - kHalfRange) * xb[b].qs[e];
      }
      scaled_sum += wb[b].scales[j] * sub_sum;
    }
    sum += HalfToFloat(wb[b].d) * xb[b].d * static_cast<float>(scaled_sum);
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ6_K> kQ6_KScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockQ6_K),
    .to_float = DequantizeRowQ6_K,
    .from_float = QuantizeRowQ6_K,
    .vec_dot = VecDotQ6_KQ8_K,
};

}  // namespace kvmesh::kernels
