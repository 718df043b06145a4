// The codebooks of the grid weight types (IQ3_S, IQ3_XXS, IQ2_XS) as the
// kernels read them, and the nearest-point search their quantizers use.
//
// A grid type stores a group of 4 (IQ3) or 8 (IQ2_XS) magnitudes as the
// index of one point of its codebook, plus a sign per value: a 32-element
// sub-block of IQ3_S names 8 points of 512 and keeps 32 sign bits; IQ3_XXS
// names 8 points of 256; IQ2_XS names 4 points of 512. IQ3_XXS and IQ2_XS
// keep 7 sign bits per 8 values, the eighth being their parity (an even
// number of values is negative). The points themselves are in
// iq_grids_data.h as level indices; the byte tables here are built from them
// at compile time.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "worker/kernels/cpu/iq_grids_data.h"
#include "worker/kernels/cpu/k_quant_common.h"

namespace kvmesh::kernels {

inline constexpr int kGridSuperBlock = 256;

namespace grid_internal {

template <std::size_t N, typename Word>
constexpr std::array<Word, N> Expand(const uint16_t (&levels)[N], int width, int bits,
                                     const uint8_t* values) {
  std::array<Word, N> table{};
  for (std::size_t i = 0; i < N; ++i) {
    Word word = 0;
    for (int k = 0; k < width; ++k) {
      const int level = (levels[i] >> (bits * k)) & ((1 << bits) - 1);
      word |= static_cast<Word>(values[level]) << (8 * k);
    }
    table[i] = word;
  }
  return table;
}

inline constexpr uint8_t kIq3sValues[8] = {1, 3, 5, 7, 9, 11, 13, 15};
inline constexpr uint8_t kIq3xxsValues[8] = {4, 12, 20, 28, 36, 44, 52, 62};
inline constexpr uint8_t kIq2xsValues[3] = {8, 25, 43};

}  // namespace grid_internal

// Point i of each codebook as bytes, value k in byte k (little-endian).
alignas(64) inline constexpr std::array<uint32_t, 512> kIq3sGrid =
    grid_internal::Expand<512, uint32_t>(kIq3sGridLevels, 4, 3, grid_internal::kIq3sValues);
alignas(64) inline constexpr std::array<uint32_t, 256> kIq3xxsGrid =
    grid_internal::Expand<256, uint32_t>(kIq3xxsGridLevels, 4, 3, grid_internal::kIq3xxsValues);
alignas(64) inline constexpr std::array<uint64_t, 512> kIq2xsGrid =
    grid_internal::Expand<512, uint64_t>(kIq2xsGridLevels, 8, 2, grid_internal::kIq2xsValues);

// The IQ3_S point whose level indices are `levels` (3 bits per value, as
// kIq3sGridLevels), or -1 where no point has them.
inline constexpr std::array<int16_t, 4096> kIq3sPointOfLevels = [] {
  std::array<int16_t, 4096> table{};
  for (int16_t& p : table) p = -1;
  for (int i = 0; i < 512; ++i) table[kIq3sGridLevels[i]] = static_cast<int16_t>(i);
  return table;
}();

// The eight sign bits a 7-bit sign code stands for: the code and, as bit 7,
// its parity.
constexpr uint8_t GridSigns(int code) {
  return static_cast<uint8_t>(code | (__builtin_popcount(static_cast<unsigned>(code)) & 1) << 7);
}

// A codebook and a fast search for its point nearest to a group of
// magnitudes. Immutable after construction, so shared freely by threads.
class GridCodebook {
 public:
  // `levels[i]` holds point i's level indices (`bits` each, value k at bit
  // bits * k); `values` the magnitude of each level, ascending.
  GridCodebook(const uint16_t* levels, int points, int width, int bits, std::vector<float> values);

  int width() const { return width_; }
  int points() const { return points_; }
  // Magnitude of value k of point p.
  float Value(int p, int k) const { return point_values_[static_cast<size_t>(p) * width_ + k]; }

  // The point p minimising sum_k w[k] * (a[k] - step * Value(p, k))^2 for
  // magnitudes a >= 0 and step > 0, found among the points nearest, level by
  // level, to a / step (exact when a / step rounds to a point; otherwise the
  // best of the points within one level step of the least distance).
  // *error receives the weighted error.
  int Nearest(const float* a, const float* w, float step, float* error) const;

 private:
  int width_;
  int points_;
  int bits_;
  std::vector<float> values_;         // level magnitudes
  std::vector<float> point_values_;   // points_ x width_
  std::vector<int32_t> key_point_;    // key (rounded levels) -> point, or -1
  std::vector<uint32_t> near_begin_;  // key -> first entry of near_ (size keys + 1)
  std::vector<uint16_t> near_;        // points near each key that is no point
};

// --- quantizer helpers ------------------------------------------------------
//
// A run of values sharing one step (a sub-block) is quantized as groups of
// the codebook's width: each group's magnitudes take their nearest point, and
// each value its own sign - except that with `even_signs` every 8 values must
// have an even number of negatives, so where they do not, the value whose
// flip costs least is flipped.

// Weighted squared error of x[0..n) (n a multiple of the width, and of 8
// with even_signs) as `step` times the points Nearest picks; the points go to
// `points`.
float GridRunError(const GridCodebook& book, const float* x, const float* w, int n, float step,
                   bool even_signs, uint16_t* points);

// The sign bits (bit k: value k negative) of `count` <= 8 values x whose
// dequantized magnitudes are m; with even_signs, made even by flipping the
// value of least w * |x| * m (the cheapest flip).
uint8_t GridSignBits(const float* x, const float* w, const float* m, int count, bool even_signs);

// The step of least GridRunError for x[0..n): tried at steps that put the
// largest magnitude near the codebook's largest value, then refined by
// weighted least squares for the chosen points. 0 for a run of zeros.
float FitGridStep(const GridCodebook& book, const float* x, const float* w, int n, bool even_signs);

// A super-block of a grid type as its quantizer chose it.
struct GridSuperBlock {
  uint16_t d = 0;                       // the f16 super-scale
  int scales[16] = {};                  // per run, 0..15
  uint16_t points[64] = {};             // per group of the codebook's width
  float weights[kGridSuperBlock] = {};  // the search's per-value weights
};

// Quantizes 256 values as runs of `run` values (16 or 32) that share a 4-bit
// scale s, whose step is step(d, s) computed exactly as the type's decoder
// computes it, with step(d, s) = step(d, 0) * (2s + 1). Each run's step is
// fitted (FitGridStep); d maps the largest to scale 15; then each run keeps
// the scale near its rounded one, and the points, of least error as the
// kernels decode them. A super-block of zeros (or one whose d underflows)
// gets d = 0, which decodes to zeros.
template <typename Step>
void QuantizeGridSuperBlock(const GridCodebook& book, const float* x, int run, bool even_signs,
                            Step step, GridSuperBlock* out) {
  constexpr int kMaxScale = 15;
  const int runs = kGridSuperBlock / run;
  const int groups_per_run = run / book.width();
  *out = {};
  float steps[16];
  float max_step = 0.0f;
  for (int r = 0; r < runs; ++r) {
    // Weights over 32-value sub-blocks, so two runs of 16 weigh alike.
    if (run * r % 32 == 0) MagnitudeWeights(x + run * r, 32, out->weights + run * r);
    steps[r] = FitGridStep(book, x + run * r, out->weights + run * r, run, even_signs);
    max_step = std::max(max_step, steps[r]);
  }
  if (max_step == 0.0f) return;
  out->d = FloatToHalf(max_step / step(1.0f, kMaxScale));
  const float d = HalfToFloat(out->d);
  if (d == 0.0f) {
    out->d = 0;
    return;
  }
  const float unit = step(d, 0);
  uint16_t trial[8];
  for (int r = 0; r < runs; ++r) {
    const int rounded = std::clamp(NearestInt((steps[r] / unit - 1.0f) * 0.5f), 0, kMaxScale);
    float best_error = -1.0f;
    for (int s = std::max(0, rounded - 1); s <= std::min(kMaxScale, rounded + 1); ++s) {
      const float error = GridRunError(book, x + run * r, out->weights + run * r, run, step(d, s),
                                       even_signs, trial);
      if (best_error < 0.0f || error < best_error) {
        best_error = error;
        out->scales[r] = s;
        std::copy(trial, trial + groups_per_run, out->points + groups_per_run * r);
      }
    }
  }
}

// --- the row functions every grid type shares -------------------------------
//
// G describes one type's block: G::Block; G::kRun, the values sharing a
// scale; G::Step(d, s), the step of scale s exactly as the format defines it,
// which is d * G::kDotFactor * (2s + 1); G::Scale(block, r) of run r; and
// G::Magnitude(block, e), G::Negative(block, e) of element e.

template <typename G>
void DequantizeGridRow(const void* src, float* dst, int64_t n) {
  const auto* blocks = static_cast<const typename G::Block*>(src);
  const int64_t num_blocks = NumBlocks(n, kGridSuperBlock);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    float* y = dst + b * kGridSuperBlock;
    for (int e = 0; e < kGridSuperBlock; ++e) {
      const float v = G::Step(d, G::Scale(blocks[b], e / G::kRun)) *
                      static_cast<float>(G::Magnitude(blocks[b], e));
      y[e] = G::Negative(blocks[b], e) ? -v : v;
    }
  }
}

// The dot product with Q8_K: per run, the exact integer sum of signed values
// times levels, times the odd integer 2s + 1; per block, d * kDotFactor * the
// activations' d times that sum (the order the SIMD kernels follow).
template <typename G>
float GridVecDotQ8_K(int64_t n, const void* w, const void* x) {
  const auto* wb = static_cast<const typename G::Block*>(w);
  const auto* xb = static_cast<const BlockQ8_K*>(x);
  const int64_t num_blocks = NumBlocks(n, kGridSuperBlock);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t scaled_sum = 0;
    for (int r = 0; r < kGridSuperBlock / G::kRun; ++r) {
      int32_t run_sum = 0;
      for (int l = 0; l < G::kRun; ++l) {
        const int e = G::kRun * r + l;
        const int v = G::Magnitude(wb[b], e);
        run_sum += (G::Negative(wb[b], e) ? -v : v) * xb[b].qs[e];
      }
      scaled_sum += (2 * G::Scale(wb[b], r) + 1) * run_sum;
    }
    sum += HalfToFloat(wb[b].d) * G::kDotFactor * xb[b].d * static_cast<float>(scaled_sum);
  }
  return sum;
}

const GridCodebook& Iq3sCodebook();
const GridCodebook& Iq3xxsCodebook();
const GridCodebook& Iq2xsCodebook();

}  // namespace kvmesh::kernels
