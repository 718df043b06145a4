// IQ3_S: 256-element super-blocks of eight 32-element sub-blocks with a 4-bit
// scale each under one f16 super-scale; each group of 4 magnitudes is one of
// 512 codebook points (iq_grids.h) and each value has its own sign:
// x = d * (1 + 2 * scale_j) * point value * sign. Dot products pair with Q8_K.
#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"
#include "worker/kernels/cpu/k_quant_common.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kSubBlockSize = 32;
constexpr int kSubBlocks = kSuperBlockSize / kSubBlockSize;

int Point(const BlockIQ3_S& block, int group) {
  return block.qs[group] | ((block.qh[group / 8] >> (group % 8)) & 1) << 8;
}

int Scale(const BlockIQ3_S& block, int j) { return (block.scales[j / 2] >> (4 * (j % 2))) & 0x0F; }

bool Negative(const BlockIQ3_S& block, int e) { return (block.signs[e / 8] >> (e % 8)) & 1; }

int Magnitude(const BlockIQ3_S& block, int e) {
  return static_cast<int>((kIq3sGrid[static_cast<size_t>(Point(block, e / 4))] >> (8 * (e % 4))) &
                          0xFF);
}

float Step(float d, int scale) { return d * static_cast<float>(1 + 2 * scale); }

void QuantizeBlock(const float* x, BlockIQ3_S* block) {
  GridSuperBlock q;
  QuantizeGridSuperBlock(Iq3sCodebook(), x, kSubBlockSize, /*even_signs=*/false, Step, &q);
  *block = {};
  block->d = q.d;
  if (q.d == 0) return;
  for (int j = 0; j < kSubBlocks; ++j) {
    block->scales[j / 2] |= static_cast<uint8_t>(q.scales[j] << (4 * (j % 2)));
  }
  for (int g = 0; g < kSuperBlockSize / 4; ++g) {
    block->qs[g] = static_cast<uint8_t>(q.points[g] & 0xFF);
    block->qh[g / 8] |= static_cast<uint8_t>((q.points[g] >> 8) << (g % 8));
  }
  for (int e = 0; e < kSuperBlockSize; ++e) {
    if (x[e] < 0.0f) block->signs[e / 8] |= static_cast<uint8_t>(1 << (e % 8));
  }
}

// The block's accessors for the shared row functions (iq_grids.h).
struct Iq3s {
  using Block = BlockIQ3_S;
  static constexpr int kRun = kSubBlockSize;
  static constexpr float kDotFactor = 1.0f;
  static float Step(float d, int s) { return kvmesh::kernels::Step(d, s); }
  static int Scale(const Block& b, int r) { return kvmesh::kernels::Scale(b, r); }
  static int Magnitude(const Block& b, int e) { return kvmesh::kernels::Magnitude(b, e); }
  static bool Negative(const Block& b, int e) { return kvmesh::kernels::Negative(b, e); }
};

}  // namespace

void DequantizeRowIQ3_S(const void* src, float* dst, int64_t n) {
  DequantizeGridRow<Iq3s>(src, dst, n);
}

void QuantizeRowIQ3_S(const float* src, void* dst, int64_t n) {
  BlockIQ3_S* blocks = static_cast<BlockIQ3_S*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kSuperBlockSize, &blocks[b]);
}

float VecDotIQ3_SQ8_K(int64_t n, const void* w, const void* x) {
  return GridVecDotQ8_K<Iq3s>(n, w, x);
}

constinit const TypeRecord<TensorType::kIQ3_S> kIQ3_SScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockIQ3_S),
    .to_float = DequantizeRowIQ3_S,
    .from_float = QuantizeRowIQ3_S,
    .vec_dot = VecDotIQ3_SQ8_K,
};

}  // namespace kvmesh::kernels
