// IQ3_XXS: 256-element super-blocks of eight 32-element sub-blocks with a
// 4-bit scale each under one f16 super-scale; each group of 4 magnitudes is
// one of 256 codebook points (iq_grids.h), and every 8 values share a 7-bit
// sign code (an even number of them negative):
// x = d * (0.5 + scale_j) * 0.5 * point value * sign. Dot products pair with
// Q8_K; the scale enters them as the odd integer 2 * scale_j + 1 and the
// super-scale as d / 4.
#include <algorithm>
#include <cmath>
#include <cstring>

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
constexpr int kWords = kSuperBlockSize / 4;  // offset of the sub-blocks' words in qs

uint32_t Word(const BlockIQ3_XXS& block, int j) {
  uint32_t word;
  std::memcpy(&word, block.qs + kWords + 4 * j, 4);
  return word;
}

int Scale(const BlockIQ3_XXS& block, int j) { return static_cast<int>(Word(block, j) >> 28); }

bool Negative(const BlockIQ3_XXS& block, int e) {
  const int j = e / kSubBlockSize;
  const int l = e % kSubBlockSize / 8;
  const uint8_t signs = GridSigns(static_cast<int>((Word(block, j) >> (7 * l)) & 127));
  return (signs >> (e % 8)) & 1;
}

int Magnitude(const BlockIQ3_XXS& block, int e) {
  return static_cast<int>((kIq3xxsGrid[block.qs[e / 4]] >> (8 * (e % 4))) & 0xFF);
}

float Step(float d, int scale) { return d * (0.5f + static_cast<float>(scale)) * 0.5f; }

void QuantizeBlock(const float* x, BlockIQ3_XXS* block) {
  const GridCodebook& book = Iq3xxsCodebook();
  GridSuperBlock q;
  QuantizeGridSuperBlock(book, x, kSubBlockSize, /*even_signs=*/true, Step, &q);
  *block = {};
  block->d = q.d;
  if (q.d == 0) return;
  const float d = HalfToFloat(q.d);
  for (int j = 0; j < kSubBlocks; ++j) {
    const uint16_t* points = q.points + kSubBlockSize / 4 * j;
    const float step = Step(d, q.scales[j]);
    uint32_t word = static_cast<uint32_t>(q.scales[j]) << 28;
    for (int l = 0; l < 4; ++l) {
      float m[8];
      for (int k = 0; k < 8; ++k) m[k] = step * book.Value(points[2 * l + k / 4], k % 4);
      const int e = kSubBlockSize * j + 8 * l;
      const uint8_t signs = GridSignBits(x + e, q.weights + e, m, 8, /*even_signs=*/true);
      word |= static_cast<uint32_t>(signs & 127) << (7 * l);
    }
    std::memcpy(block->qs + kWords + 4 * j, &word, 4);
    for (int g = 0; g < kSubBlockSize / 4; ++g) {
      block->qs[kSubBlockSize / 4 * j + g] = static_cast<uint8_t>(points[g]);
    }
  }
}

// The block's accessors for the shared row functions (iq_grids.h).
struct Iq3xxs {
  using Block = BlockIQ3_XXS;
  static constexpr int kRun = kSubBlockSize;
  static constexpr float kDotFactor = 0.25f;
  static float Step(float d, int s) { return kvmesh::kernels::Step(d, s); }
  static int Scale(const Block& b, int r) { return kvmesh::kernels::Scale(b, r); }
  static int Magnitude(const Block& b, int e) { return kvmesh::kernels::Magnitude(b, e); }
  static bool Negative(const Block& b, int e) { return kvmesh::kernels::Negative(b, e); }
};

}  // namespace

void DequantizeRowIQ3_XXS(const void* src, float* dst, int64_t n) {
  DequantizeGridRow<Iq3xxs>(src, dst, n);
}

void QuantizeRowIQ3_XXS(const float* src, void* dst, int64_t n) {
  BlockIQ3_XXS* blocks = static_cast<BlockIQ3_XXS*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kSuperBlockSize, &blocks[b]);
}

float VecDotIQ3_XXSQ8_K(int64_t n, const void* w, const void* x) {
  return GridVecDotQ8_K<Iq3xxs>(n, w, x);
}

constinit const TypeRecord<TensorType::kIQ3_XXS> kIQ3_XXSScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockIQ3_XXS),
    .to_float = DequantizeRowIQ3_XXS,
    .from_float = QuantizeRowIQ3_XXS,
    .vec_dot = VecDotIQ3_XXSQ8_K,
};

}  // namespace kvmesh::kernels
