// IQ2_XS: 256-element super-blocks of sixteen 16-element runs with a 4-bit
// scale each under one f16 super-scale; each group of 8 magnitudes is one of
// 512 codebook points (iq_grids.h) with a 7-bit sign code (an even number of
// the 8 negative): x = d * (0.5 + scale_r) * 0.25 * point value * sign. Dot
// products pair with Q8_K; the scale enters them as the odd integer
// 2 * scale_r + 1 and the super-scale as d / 8.
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

constexpr int kRunSize = 16;
constexpr int kRuns = kSuperBlockSize / kRunSize;

int Scale(const BlockIQ2_XS& block, int r) { return (block.scales[r / 2] >> (4 * (r % 2))) & 0x0F; }

bool Negative(const BlockIQ2_XS& block, int e) {
  return (GridSigns(block.qs[e / 8] >> 9) >> (e % 8)) & 1;
}

int Magnitude(const BlockIQ2_XS& block, int e) {
  return static_cast<int>((kIq2xsGrid[block.qs[e / 8] & 511] >> (8 * (e % 8))) & 0xFF);
}

float Step(float d, int scale) { return d * (0.5f + static_cast<float>(scale)) * 0.25f; }

void QuantizeBlock(const float* x, BlockIQ2_XS* block) {
  const GridCodebook& book = Iq2xsCodebook();
  GridSuperBlock q;
  QuantizeGridSuperBlock(book, x, kRunSize, /*even_signs=*/true, Step, &q);
  *block = {};
  block->d = q.d;
  if (q.d == 0) return;
  const float d = HalfToFloat(q.d);
  for (int r = 0; r < kRuns; ++r) {
    const float step = Step(d, q.scales[r]);
    block->scales[r / 2] |= static_cast<uint8_t>(q.scales[r] << (4 * (r % 2)));
    for (int g = 2 * r; g < 2 * r + 2; ++g) {
      float m[8];
      for (int k = 0; k < 8; ++k) m[k] = step * book.Value(q.points[g], k);
      const uint8_t signs = GridSignBits(x + 8 * g, q.weights + 8 * g, m, 8, /*even_signs=*/true);
      block->qs[g] = static_cast<uint16_t>(q.points[g] | (signs & 127) << 9);
    }
  }
}

// The block's accessors for the shared row functions (iq_grids.h).
struct Iq2xs {
  using Block = BlockIQ2_XS;
  static constexpr int kRun = kRunSize;
  static constexpr float kDotFactor = 0.125f;
  static float Step(float d, int s) { return kvmesh::kernels::Step(d, s); }
  static int Scale(const Block& b, int r) { return kvmesh::kernels::Scale(b, r); }
  static int Magnitude(const Block& b, int e) { return kvmesh::kernels::Magnitude(b, e); }
  static bool Negative(const Block& b, int e) { return kvmesh::kernels::Negative(b, e); }
};

}  // namespace

void DequantizeRowIQ2_XS(const void* src, float* dst, int64_t n) {
  DequantizeGridRow<Iq2xs>(src, dst, n);
}

void QuantizeRowIQ2_XS(const float* src, void* dst, int64_t n) {
  BlockIQ2_XS* blocks = static_cast<BlockIQ2_XS*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kSuperBlockSize, &blocks[b]);
}

float VecDotIQ2_XSQ8_K(int64_t n, const void* w, const void* x) {
  return GridVecDotQ8_K<Iq2xs>(n, w, x);
}

constinit const TypeRecord<TensorType::kIQ2_XS> kIQ2_XSScalar = {
    .vec_dot_type = TensorType::kQ8_K,
    .block_size = kSuperBlockSize,
    .bytes_per_block = sizeof(BlockIQ2_XS),
    .to_float = DequantizeRowIQ2_XS,
    .from_float = QuantizeRowIQ2_XS,
    .vec_dot = VecDotIQ2_XSQ8_K,
};

}  // namespace kvmesh::kernels
