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

}  // namespace

void DequantizeRowIQ2_XS(const void* src, float* dst, int64_t n) {
  const BlockIQ2_XS* blocks = static_cast<const BlockIQ2_XS*>(src);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kSuperBlockSize;
    for (int e = 0; e < kSuperBlockSize; ++e) {
      const float v =
          Step(d, Scale(blocks[b], e / kRunSize)) * static_cast<float>(Magnitude(blocks[b], e));
      y[e] = Negative(blocks[b], e) ? -v : v;
    }
  }
}

void QuantizeRowIQ2_XS(const float* src, void* dst, int64_t n) {
  BlockIQ2_XS* blocks = static_cast<BlockIQ2_XS*>(dst);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kSuperBlockSize, &blocks[b]);
}

float VecDotIQ2_XSQ8_K(int64_t n, const void* w, const void* x) {
  const BlockIQ2_XS* wb = static_cast<const BlockIQ2_XS*>(w);
  const BlockQ8_K* xb = static_cast<const BlockQ8_K*>(x);
  const int64_t num_blocks = NumBlocks(n, kSuperBlockSize);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t scaled_sum = 0;  // sum_r (2 scale_r + 1) * sum_l value * q
    for (int r = 0; r < kRuns; ++r) {
      int32_t run_sum = 0;
      for (int l = 0; l < kRunSize; ++l) {
        const int e = kRunSize * r + l;
        const int v = Magnitude(wb[b], e);
        run_sum += (Negative(wb[b], e) ? -v : v) * xb[b].qs[e];
      }
      scaled_sum += (2 * Scale(wb[b], r) + 1) * run_sum;
    }
    sum += HalfToFloat(wb[b].d) * 0.125f * xb[b].d * static_cast<float>(scaled_sum);
  }
  return sum;
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
