// Q2_K: 256-element super-blocks of sixteen 16-element sub-blocks, each with
// a 4-bit scale and min under f16 super-scales: x = d*scale_j*level -
// dmin*min_j, level in 0..3. Dot products pair with Q8_K; its bsums (one per
// 16 elements) apply the mins without touching the levels.
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kSubBlockSize = 16;
constexpr int kSubBlocks = kSuperBlockSize / kSubBlockSize;
constexpr int kMaxLevel = 3;
constexpr int kMaxCode = 15;  // 4-bit scales and mins
// Candidate inverse scales (3 - 0.5 .. 3 + 1.0) / range.
constexpr AffineSearch kSearch{-0.5f, 0.1f, 15};

// Level (0..3) of element e (block_types.h).
int Level(const BlockQ2_K& block, int e) {
  return (block.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

}  // namespace

void DequantizeRowQ2_K(const void* src, float* dst, int64_t n) {
  const BlockQ2_K* blocks = static_cast<const BlockQ2_K*>(src);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    const float dmin = HalfToFloat(blocks[b].dmin);
    float* y = dst + b * kSuperBlockSize;
    for (int j = 0; j < kSubBlocks; ++j) {
      const float sub_scale = d * (blocks[b].scales[j] & 0x0F);
      const float sub_min = dmin * (blocks[b].scales[j] >> 4);
      for (int l = 0; l < kSubBlockSize; ++l) {
        const int e = kSubBlockSize * j + l;
        y[e] = sub_scale * Level(blocks[b], e) - sub_min;
      }
    }
  }
}

void QuantizeRowQ2_K(const float* src, void* dst, int64_t n) {
  BlockQ2_K* blocks = static_cast<BlockQ2_K*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    AffineGroups fit;
    QuantizeAffineGroups(src + b * kSuperBlockSize, kSubBlockSize, kMaxLevel, kMaxCode, kSearch,
                         &fit);
    BlockQ2_K& block = blocks[b];
    block.d = fit.d;
    block.dmin = fit.dmin;
    for (int j = 0; j < kSubBlocks; ++j) {
      block.scales[j] = static_cast<uint8_t>(fit.pairs[j].scale | fit.pairs[j].min << 4);
    }
    for (int i = 0; i < kSuperBlockSize / 4; ++i) block.qs[i] = 0;
    for (int e = 0; e < kSuperBlockSize; ++e) {
      block.qs[32 * (e / 128) + e % 32] |=
          static_cast<uint8_t>(fit.levels[e] << (2 * ((e % 128) / 32)));
    }
  }
}

float VecDotQ2_KQ8_K(int64_t n, const void* w, const void* x) {
  const BlockQ2_K* wb = static_cast<const BlockQ2_K*>(w);
  const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(x);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t scaled_sum = 0;  // sum_j scale_j * sum_l level * q
    int32_t min_sum = 0;     // sum_j min_j * sum_l q
    for (int j = 0; j < kSubBlocks; ++j) {
      int32_t sub_sum = 0;
      for (int l = 0; l < kSubBlockSize; ++l) {
        const int e = kSubBlockSize * j + l;
        sub_sum += Level(wb[b], e) * xb[b].qs[e];
      }
      scaled_sum += (wb[b].scales[j] & 0x0F) * sub_sum;
      min_sum += (wb[b].scales[j] >> 4) * xb[b].bsums[j];
    }
    const float d = HalfToFloat(wb[b].d) * xb[b].d;
    const float dmin = HalfToFloat(wb[b].dmin) * xb[b].d;
    sum += d * static_cast<float>(scaled_sum) - dmin * static_cast<float>(min_sum);
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ2_K> kQ2_KScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockQ2_K),
    .to_float = DequantizeRowQ2_K,
    .from_float = QuantizeRowQ2_K,
    .vec_dot = VecDotQ2_KQ8_K,
};

}  // namespace kvmesh::kernels
