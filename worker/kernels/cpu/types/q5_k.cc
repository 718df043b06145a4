// Q5_K: as Q4_K with a fifth bit per level (level in 0..31):
// x = d*scale_j*level - dmin*min_j. Dot products pair with Q8_K.
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kSubBlocks = kSuperBlockSize / 32;
constexpr int kMaxLevel = 31;
// Candidate inverse scales (31 - 0.5 .. 31 + 1.0) / range, as ggml searches.
constexpr AffineSearch kSearch{-0.5f, 0.1f, 15};

// Level (0..31) of element e. Sub-block j = e / 32 takes its low nibbles from
// chunk j / 2 of qs (low nibble if j is even, high if odd) and its fifth bit
// from bit j of qh[e % 32].
int Level(const BlockQ5_K& block, int e) {
  const int j = e / 32;
  const int l = e % 32;
  const uint8_t byte = block.qs[32 * (j / 2) + l];
  const int nibble = j % 2 == 0 ? byte & 0x0F : byte >> 4;
  return nibble | ((block.qh[l] >> j) & 1) << 4;
}

}  // namespace

void DequantizeRowQ5_K(const void* src, float* dst, int64_t n) {
  const BlockQ5_K* blocks = static_cast<const BlockQ5_K*>(src);
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

void QuantizeRowQ5_K(const float* src, void* dst, int64_t n) {
  BlockQ5_K* blocks = static_cast<BlockQ5_K*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    AffineSuperBlock fit;
    QuantizeAffineSuperBlock(src + b * kSuperBlockSize, kMaxLevel, kSearch, &fit);
    BlockQ5_K& block = blocks[b];
    block.d = fit.d;
    block.dmin = fit.dmin;
    for (int k = 0; k < kPackedScaleBytes; ++k) block.scales[k] = fit.scales[k];
    for (int l = 0; l < 32; ++l) block.qh[l] = 0;
    for (int chunk = 0; chunk < kSuperBlockSize / 64; ++chunk) {
      for (int l = 0; l < 32; ++l) {
        const int first = fit.levels[64 * chunk + l];
        const int second = fit.levels[64 * chunk + 32 + l];
        block.qs[32 * chunk + l] = static_cast<uint8_t>((first & 0x0F) | (second & 0x0F) << 4);
        block.qh[l] |=
            static_cast<uint8_t>((first >> 4) << (2 * chunk) | (second >> 4) << (2 * chunk + 1));
      }
    }
  }
}

float VecDotQ5_KQ8_K(int64_t n, const void* w, const void* x) {
  const BlockQ5_K* wb = static_cast<const BlockQ5_K*>(w);
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

constinit const TypeRecord<TensorType::kQ5_K> kQ5_KScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockQ5_K),
    .to_float = DequantizeRowQ5_K,
    .from_float = QuantizeRowQ5_K,
    .vec_dot = VecDotQ5_KQ8_K,
};

}  // namespace kvmesh::kernels
