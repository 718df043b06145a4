// Helpers shared by the K-quant kernels (Q2_K … Q8_K) and the IQ4 types: rounding,
// the 12-byte packing of 6-bit (scale, min) pairs, and the scale searches the
// weight quantizers use.
//
// The searches pick, for a small group of values, the integer levels and the
// float scale (and offset) that minimise the weighted squared error
// sum_i w_i * (dequantized_i - x_i)^2. They are deterministic and allocate
// nothing. Quality matters more than speed here: these write the model files
// the engine is tested with.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "common/check.h"
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"

namespace kvmesh::kernels {

// Rounds to nearest, ties to even (the default floating-point rounding mode),
// which is what ggml's nearest_int does. Used wherever ggml uses nearest_int
// so our Q8_K activations round the same way; |x| must fit in an int.
inline int NearestInt(float x) { return static_cast<int>(std::lrintf(x)); }

// --- 6-bit (scale, min) pairs of Q4_K / Q5_K -----------------------------
//
// Sub-block j < 4 keeps its scale in the low 6 bits of byte j and its min in
// the low 6 bits of byte j + 4. Sub-block j >= 4 keeps the low 4 bits of
// scale and min in the two nibbles of byte j + 4, and their top 2 bits in the
// spare top bits of bytes j - 4 (scale) and j (min).

struct ScaleMin {
  uint8_t scale;  // 0..63
  uint8_t min;    // 0..63
};

inline ScaleMin GetScaleMinK4(const uint8_t packed[kPackedScaleBytes], int j) {
  if (j < 4) {
    return {static_cast<uint8_t>(packed[j] & 63), static_cast<uint8_t>(packed[j + 4] & 63)};
  }
  return {static_cast<uint8_t>((packed[j + 4] & 0x0F) | (packed[j - 4] >> 6) << 4),
          static_cast<uint8_t>((packed[j + 4] >> 4) | (packed[j] >> 6) << 4)};
}

// Stores sub-block j's pair, leaving every other pair intact (so pairs may be
// set in any order).
inline void SetScaleMinK4(uint8_t packed[kPackedScaleBytes], int j, ScaleMin value) {
  KVMESH_CHECK(j >= 0 && j < 8 && value.scale < 64 && value.min < 64);
  if (j < 4) {
    packed[j] = static_cast<uint8_t>((packed[j] & 0xC0) | value.scale);
    packed[j + 4] = static_cast<uint8_t>((packed[j + 4] & 0xC0) | value.min);
  } else {
    packed[j + 4] = static_cast<uint8_t>((value.scale & 0x0F) | (value.min & 0x0F) << 4);
    packed[j - 4] = static_cast<uint8_t>((packed[j - 4] & 0x3F) | (value.scale >> 4) << 6);
    packed[j] = static_cast<uint8_t>((packed[j] & 0x3F) | (value.min >> 4) << 6);
  }
}

// The single-row dot product with Q8_K of the two types that share the
// "affine" super-block header (Q4_K, Q5_K: f16 d and dmin, then 12 bytes of
// 6-bit scales and mins), for the SIMD tiers: `sub_sum(wb, xq, j)` returns
// the exact integer sum of sub-block j's 32 levels (wb: the super-block's
// first byte) times the 32 activation levels at xq - the tier's SIMD step;
// the rest follows the reference's order, so every tier equals it bit for
// bit.
template <size_t kBlockBytes, typename SubSum>
float AffineKDotQ8_K(int64_t n, const void* w, const void* x, SubSum sub_sum) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const uint8_t* xb = static_cast<const uint8_t*>(x);  // Q8_K blocks of 292 bytes
  float sum = 0.0f;
  for (int64_t b = 0; b < n / 256; ++b, wb += kBlockBytes, xb += 292) {
    int32_t scaled_sum = 0;
    int32_t min_sum = 0;
    int16_t bsums[16];
    std::memcpy(bsums, xb + 260, sizeof bsums);
    for (int j = 0; j < 8; ++j) {
      const ScaleMin pair = GetScaleMinK4(wb + 4, j);
      scaled_sum += pair.scale * sub_sum(wb, xb + 4 + 32 * j, j);
      min_sum += pair.min * (bsums[2 * j] + bsums[2 * j + 1]);
    }
    uint16_t dh, dminh;
    float dx;
    std::memcpy(&dh, wb, 2);
    std::memcpy(&dminh, wb + 2, 2);
    std::memcpy(&dx, xb, 4);
    const float d = HalfToFloat(dh) * dx;
    const float dmin = HalfToFloat(dminh) * dx;
    sum += d * static_cast<float>(scaled_sum) - dmin * static_cast<float>(min_sum);
  }
  return sum;
}

// --- scale searches -----------------------------------------------------

// Per-element weights for the searches: the group's RMS plus |x_i|, so large
// values count more (they dominate dot products) without letting the group's
// small values be ignored.
void MagnitudeWeights(const float* x, int n, float* weights);

// x_i ~= scale * level_i - offset with level_i in 0..max_level, scale >= 0,
// offset >= 0 (the K formats store both unsigned).
struct AffineFit {
  float scale = 0.0f;
  float offset = 0.0f;
};

// Candidate inverse scales tried by FitAffineLevels:
// (max_level + first + k * step) / (max - min) for k = 0..num_steps.
struct AffineSearch {
  float first;
  float step;
  int num_steps;
};

// Chooses levels[0..n) and the affine map minimising the weighted squared
// error. Each candidate inverse scale assigns levels by rounding; the scale
// and offset for those levels are then solved exactly by weighted least
// squares. The best candidate is polished by alternating "re-round levels" and
// "re-solve scale/offset", each of which can only lower the error.
AffineFit FitAffineLevels(const float* x, const float* weights, int n, int max_level,
                          const AffineSearch& search, uint8_t* levels);

// x_i ~= scale * level_i with level_i in -half_range .. half_range - 1 (the
// scale may be negative so the value of largest magnitude can use the wider
// negative end). Same search-then-polish scheme as FitAffineLevels, trying
// inverse scales -(half_range + 0.1 k) / max for k = -9..9. Returns the scale;
// 0 (with all levels 0) for a group of zeros.
float FitSymmetricLevels(const float* x, const float* weights, int n, int half_range,
                         int8_t* levels);

// Quantizes one 256-element super-block as groups of `group_size` with an
// unsigned (scale, min) pair each, both quantized to 0..max_code against f16
// super-scales d and dmin (Q2_K: groups of 16, levels 0..3, 4-bit pairs).
// Each group is fitted, then the pair near the rounded one (and the levels)
// that give the least error as the kernels dequantize it is kept.
struct AffineGroups {
  uint16_t d = 0;
  uint16_t dmin = 0;
  ScaleMin pairs[kSuperBlockSize / 16] = {};
  uint8_t levels[kSuperBlockSize] = {};
};
void QuantizeAffineGroups(const float* x, int group_size, int max_level, int max_code,
                          const AffineSearch& search, AffineGroups* out);

// Quantizes one 256-element super-block as sixteen groups of 16 with
// symmetric levels -half_range .. half_range - 1 (stored + half_range) and a
// signed integer scale each, -scale_range .. scale_range - 1, under one f16
// super-scale d (Q6_K: half_range 32, int8 scales; Q3_K: 4 and 6-bit
// scales). Each group is fitted; the largest scale maps to -scale_range, the
// wide end; then each group keeps the scale near its rounded one (and the
// levels) that give the least error as the kernels dequantize it. A block of
// zeros gets d = 0, scales 0 and levels 0.
struct SymmetricSuperBlock {
  uint16_t d = 0;
  int scales[kSuperBlockSize / 16] = {};
  uint8_t levels[kSuperBlockSize] = {};
};
void QuantizeSymmetricSuperBlock(const float* x, int half_range, int scale_range,
                                 SymmetricSuperBlock* out);

// The code (0..15) of the IQ4 value nearest to v (block_types.h, kIq4Values).
int NearestIq4Code(float v);

// x_i ~= scale * kIq4Values[code_i]: the scale and codes of least weighted
// squared error found by trying inverse scales that put the value of largest
// magnitude near -127, then polishing as FitSymmetricLevels does. Returns 0
// (every code standing for the value nearest 0) for a group of zeros.
float FitIq4Group(const float* x, const float* weights, int n, uint8_t* codes);

// Quantizes one 256-element super-block for Q4_K (max_level 15) or Q5_K
// (max_level 31): fits each 32-element sub-block, quantizes the eight scales
// and offsets to 6 bits against f16 super-scales d and dmin, then picks, per
// sub-block, the 6-bit pair near the rounded one (and the levels) that give
// the least error as the kernels will actually dequantize it.
struct AffineSuperBlock {
  uint16_t d = 0;
  uint16_t dmin = 0;
  uint8_t scales[kPackedScaleBytes] = {};
  uint8_t levels[kSuperBlockSize] = {};
};
void QuantizeAffineSuperBlock(const float* x, int max_level, const AffineSearch& search,
                              AffineSuperBlock* out);

}  // namespace kvmesh::kernels
