// Q4_K: 256-element super-blocks of eight 32-element sub-blocks, each with a
// 6-bit scale and min under f16 super-scales: x = d*scale_j*level - dmin*min_j,
// level in 0..15. Dot products pair with Q8_K; its bsums let the min term be
// applied per sub-block without touching the levels.
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kSubBlocks = kSuperBlockSize / 32;
constexpr int kMaxLevel = 15;
// Candidate inverse scales (15 - 1.0 .. 15 + 1.0) / range, as ggml searches.
constexpr AffineSearch kSearch{-1.0f, 0.1f, 20};

// Level (0..15) of element e: chunk e / 64 stores its first 32 elements in
// the low nibbles of 32 bytes and its second 32 in the high nibbles.
int Level(const BlockQ4_K& block, int e) {
  const uint8_t byte = block.qs[32 * (e / 64) + e % 32];
  return (e % 64) < 32 ? byte & 0x0F : byte >> 4;
}

}  // namespace

void DequantizeRowQ4_K(const void* src, float* dst, int64_t n) {
  const BlockQ4_K* blocks = static_cast<const BlockQ4_K*>(src);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    const float dmin = HalfToFloat(blocks[b].dmin);
    float* y = dst + b * kSuperBlockSize;
    for (int j = 0; j < kSubBlocks; ++j) {
      const ScaleMin pair = GetScaleMinK4(blocks[b].scales, j);
      const float sub_scale = d * pair.scale;
      const float sub_min = dmin * pair.min;
      for (int l = 0; l < 32; ++l) {
        y[32 * j + l] = sub_scale * Level(blocks[b], 32 * j + l) - sub_min;
      }
    }
  }
}

void QuantizeRowQ4_K(const float* src, void* dst, int64_t n) {
  BlockQ4_K* blocks = static_cast<BlockQ4_K*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    AffineSuperBlock fit;
    QuantizeAffineSuperBlock(src + b * kSuperBlockSize, kMaxLevel, kSearch, &fit);
    BlockQ4_K& block = blocks[b];
    block.d = fit.d;
    block.dmin = fit.dmin;
    for (int k = 0; k < kPackedScaleBytes; ++k) block.scales[k] = fit.scales[k];
    for (int chunk = 0; chunk < kSuperBlockSize / 64; ++chunk) {
      for (int l = 0; l < 32; ++l) {
        const uint8_t* levels = fit.levels + 64 * chunk;
        block.qs[32 * chunk + l] = static_cast<uint8_t>(levels[l] | levels[l + 32] << 4);
      }
    }
  }
}

float VecDotQ4_KQ8_K(int64_t n, const void* w, const void* x) {
  const BlockQ4_K* wb = static_cast<const BlockQ4_K*>(w);
  const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(x);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t scaled_sum = 0;  // sum_j scale_j * sum_l level * q
    int32_t min_sum = 0;     // sum_j min_j * sum_l q
    for (int j = 0; j < kSubBlocks; ++j) {
      const ScaleMin pair = GetScaleMinK4(wb[b].scales, j);
      int32_t sub_sum = 0;
      for (int l = 0; l < 32; ++l) sub_sum += Level(wb[b], 32 * j + l) * xb[b].qs[32 * j + l];
      scaled_sum += pair.scale * sub_sum;
      min_sum += pair.min * (xb[b].bsums[2 * j] + xb[b].bsums[2 * j + 1]);
    }
    const float d = HalfToFloat(wb[b].d) * xb[b].d;
    const float dmin = HalfToFloat(wb[b].dmin) * xb[b].d;
    sum += d * static_cast<float>(scaled_sum) - dmin * static_cast<float>(min_sum);
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ4_K> kQ4_KScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockQ4_K),
    .to_float = DequantizeRowQ4_K,
    .from_float = QuantizeRowQ4_K,
    .vec_dot = VecDotQ4_KQ8_K,
};

}  // namespace kvmesh::kernels
