#include "worker/kernels/cpu/k_quant_common.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"

namespace kvmesh::kernels {
namespace {

// Largest group the searches handle (Q4_K / Q5_K sub-blocks are 32 wide).
constexpr int kMaxGroup = 32;
// Polishing converges in a handful of rounds; this only bounds the loop.
constexpr int kMaxPolishRounds = 8;
// Below this magnitude a symmetric group is treated as all zeros.
constexpr float kZeroGroupMagnitude = 1e-15f;

void AssignAffineLevels(const float* x, int n, int max_level, float inv_scale, float base,
                        uint8_t* levels) {
  for (int i = 0; i < n; ++i) {
    const int l = NearestInt(inv_scale * (x[i] - base));
    levels[i] = static_cast<uint8_t>(std::clamp(l, 0, max_level));
  }
}

double AffineError(const float* x, const float* weights, int n, const uint8_t* levels, float scale,
                   float base) {
  double error = 0.0;
  for (int i = 0; i < n; ++i) {
    const double diff = static_cast<double>(scale * levels[i] + base) - x[i];
    error += weights[i] * diff * diff;
  }
  return error;
}

// Weighted least squares for x ~= scale * level + base with base <= 0 (the
// stored offset -base is unsigned). False when the levels cannot determine a
// non-negative scale (e.g. all equal).
bool SolveAffine(const float* x, const float* weights, int n, const uint8_t* levels, float* scale,
                 float* base) {
  double sum_w = 0, sum_x = 0, sum_l = 0, sum_ll = 0, sum_xl = 0;
  for (int i = 0; i < n; ++i) {
    const double w = weights[i];
    const double l = levels[i];
    sum_w += w;
    sum_x += w * x[i];
    sum_l += w * l;
    sum_ll += w * l * l;
    sum_xl += w * l * x[i];
  }
  const double det = sum_w * sum_ll - sum_l * sum_l;
  if (det <= 0.0) return false;
  double s = (sum_w * sum_xl - sum_x * sum_l) / det;
  double b = (sum_ll * sum_x - sum_l * sum_xl) / det;
  if (b > 0.0) {  // the best line wants a positive base: pin it at zero instead
    b = 0.0;
    s = sum_xl / sum_ll;
  }
  if (s < 0.0) return false;
  *scale = static_cast<float>(s);
  *base = static_cast<float>(b);
  return true;
}

void AssignSymmetricLevels(const float* x, int n, int half_range, float inv_scale, int8_t* levels) {
  for (int i = 0; i < n; ++i) {
    const int l = NearestInt(inv_scale * x[i]);
    levels[i] = static_cast<int8_t>(std::clamp(l, -half_range, half_range - 1));
  }
}

// For fixed levels the best scale is sum(w x l) / sum(w l^2), which lowers
// the error sum(w x^2) by sum(w x l)^2 / sum(w l^2): the "gain" maximised here.
struct SymmetricFit {
  double gain = -1.0;
  float scale = 0.0f;
};

SymmetricFit SolveSymmetric(const float* x, const float* weights, int n, const int8_t* levels) {
  double sum_xl = 0, sum_ll = 0;
  for (int i = 0; i < n; ++i) {
    sum_xl += static_cast<double>(weights[i]) * x[i] * levels[i];
    sum_ll += static_cast<double>(weights[i]) * levels[i] * levels[i];
  }
  if (sum_ll <= 0.0) return {};
  return {sum_xl * sum_xl / sum_ll, static_cast<float>(sum_xl / sum_ll)};
}

// Levels and weighted error for one sub-block of n given its quantized
// pair, computed exactly as the kernels dequantize: d * scale * level - dmin * min.
double QuantizeSubBlock(const float* x, const float* weights, int n, float d, float dmin,
                        ScaleMin pair, int max_level, uint8_t* levels) {
  const float sub_scale = d * pair.scale;
  const float sub_min = dmin * pair.min;
  double error = 0.0;
  for (int i = 0; i < n; ++i) {
    int l = 0;
    if (sub_scale != 0.0f) l = std::clamp(NearestInt((x[i] + sub_min) / sub_scale), 0, max_level);
    levels[i] = static_cast<uint8_t>(l);
    const double diff = static_cast<double>(sub_scale * l - sub_min) - x[i];
    error += weights[i] * diff * diff;
  }
  return error;
}

}  // namespace

void MagnitudeWeights(const float* x, int n, float* weights) {
  float sum_squares = 0.0f;
  for (int i = 0; i < n; ++i) sum_squares += x[i] * x[i];
  const float rms = std::sqrt(sum_squares / n);
  for (int i = 0; i < n; ++i) weights[i] = rms + std::fabs(x[i]);
}

AffineFit FitAffineLevels(const float* x, const float* weights, int n, int max_level,
                          const AffineSearch& search, uint8_t* levels) {
  KVMESH_CHECK(n > 0 && n <= kMaxGroup);
  float min = x[0];
  float max = x[0];
  for (int i = 1; i < n; ++i) {
    min = std::min(min, x[i]);
    max = std::max(max, x[i]);
  }
  min = std::min(min, 0.0f);  // the offset is stored unsigned
  if (max == min) {           // constant group <= 0: the offset alone is exact
    std::fill(levels, levels + n, uint8_t{0});
    return {0.0f, -min};
  }

  // Baseline: spread [min, max] over the levels evenly.
  float best_scale = (max - min) / max_level;
  float best_base = min;
  AssignAffineLevels(x, n, max_level, max_level / (max - min), min, levels);
  double best_error = AffineError(x, weights, n, levels, best_scale, best_base);

  uint8_t trial[kMaxGroup];
  for (int k = 0; k <= search.num_steps; ++k) {
    const float inv_scale = (max_level + search.first + search.step * k) / (max - min);
    AssignAffineLevels(x, n, max_level, inv_scale, min, trial);
    float scale, base;
    if (!SolveAffine(x, weights, n, trial, &scale, &base)) continue;
    const double error = AffineError(x, weights, n, trial, scale, base);
    if (error < best_error) {
      best_error = error;
      best_scale = scale;
      best_base = base;
      std::copy(trial, trial + n, levels);
    }
  }

  for (int round = 0; round < kMaxPolishRounds && best_scale > 0.0f; ++round) {
    AssignAffineLevels(x, n, max_level, 1.0f / best_scale, best_base, trial);
    float scale, base;
    if (!SolveAffine(x, weights, n, trial, &scale, &base)) break;
    const double error = AffineError(x, weights, n, trial, scale, base);
    if (!(error < best_error)) break;
    best_error = error;
    best_scale = scale;
    best_base = base;
    std::copy(trial, trial + n, levels);
  }
  return {best_scale, -best_base};
}

float FitSymmetricLevels(const float* x, const float* weights, int n, int half_range,
                         int8_t* levels) {
  KVMESH_CHECK(n > 0 && n <= kMaxGroup);
  float amax = 0.0f;
  float max = 0.0f;  // signed value of largest magnitude (first one wins)
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  std::fill(levels, levels + n, int8_t{0});
  if (amax < kZeroGroupMagnitude) return 0.0f;

  // Mapping the largest value near -half_range uses the wider negative end.
  SymmetricFit best;
  int8_t trial[kMaxGroup];
  for (int k = -9; k <= 9; ++k) {
    AssignSymmetricLevels(x, n, half_range, -(half_range + 0.1f * k) / max, trial);
    const SymmetricFit fit = SolveSymmetric(x, weights, n, trial);
    if (fit.gain > best.gain) {
      best = fit;
      std::copy(trial, trial + n, levels);
    }
  }

  for (int round = 0; round < kMaxPolishRounds && best.scale != 0.0f; ++round) {
    AssignSymmetricLevels(x, n, half_range, 1.0f / best.scale, trial);
    const SymmetricFit fit = SolveSymmetric(x, weights, n, trial);
    if (!(fit.gain > best.gain)) break;
    best = fit;
    std::copy(trial, trial + n, levels);
  }
  return best.scale;
}

void QuantizeAffineGroups(const float* x, int group_size, int max_level, int max_code,
                          const AffineSearch& search, AffineGroups* out) {
  KVMESH_CHECK(group_size > 0 && group_size <= kMaxGroup && kSuperBlockSize % group_size == 0);
  const int groups = kSuperBlockSize / group_size;
  float weights[kSuperBlockSize];
  AffineFit fits[kSuperBlockSize / 16];
  float max_scale = 0.0f;
  float max_offset = 0.0f;
  for (int j = 0; j < groups; ++j) {
    const int at = group_size * j;
    MagnitudeWeights(x + at, group_size, weights + at);
    fits[j] =
        FitAffineLevels(x + at, weights + at, group_size, max_level, search, out->levels + at);
    max_scale = std::max(max_scale, fits[j].scale);
    max_offset = std::max(max_offset, fits[j].offset);
  }

  const float codes = static_cast<float>(max_code);
  out->d = FloatToHalf(max_scale / codes);
  out->dmin = FloatToHalf(max_offset / codes);
  const float d = HalfToFloat(out->d);
  const float dmin = HalfToFloat(out->dmin);
  const float inv_scale = max_scale > 0.0f ? codes / max_scale : 0.0f;
  const float inv_offset = max_offset > 0.0f ? codes / max_offset : 0.0f;

  uint8_t trial[kMaxGroup];
  for (int j = 0; j < groups; ++j) {
    // The rounding of scale and offset to max_code steps interact; trying
    // the neighbours of the rounded pair against the real dequantization
    // recovers most of what the rounding loses.
    const int at = group_size * j;
    const int rounded_scale = std::min(max_code, NearestInt(inv_scale * fits[j].scale));
    const int rounded_min = std::min(max_code, NearestInt(inv_offset * fits[j].offset));
    double best_error = -1.0;
    for (int s = std::max(0, rounded_scale - 1); s <= std::min(max_code, rounded_scale + 1); ++s) {
      for (int m = std::max(0, rounded_min - 1); m <= std::min(max_code, rounded_min + 1); ++m) {
        const ScaleMin pair{static_cast<uint8_t>(s), static_cast<uint8_t>(m)};
        const double error =
            QuantizeSubBlock(x + at, weights + at, group_size, d, dmin, pair, max_level, trial);
        if (best_error < 0.0 || error < best_error) {
          best_error = error;
          out->pairs[j] = pair;
          std::copy(trial, trial + group_size, out->levels + at);
        }
      }
    }
  }
}

void QuantizeAffineSuperBlock(const float* x, int max_level, const AffineSearch& search,
                              AffineSuperBlock* out) {
  AffineGroups groups;
  QuantizeAffineGroups(x, 32, max_level, 63, search, &groups);
  out->d = groups.d;
  out->dmin = groups.dmin;
  std::memset(out->scales, 0, sizeof(out->scales));
  for (int j = 0; j < kSuperBlockSize / 32; ++j) SetScaleMinK4(out->scales, j, groups.pairs[j]);
  std::copy(groups.levels, groups.levels + kSuperBlockSize, out->levels);
}

namespace {

// Levels (stored + half_range) and weighted error of a group of 16 under the
// step d * scale, computed as the kernels dequantize.
double QuantizeSymmetricGroup(const float* x, const float* weights, float d, int scale,
                              int half_range, uint8_t* levels) {
  const float step = d * static_cast<float>(scale);
  double error = 0.0;
  for (int i = 0; i < 16; ++i) {
    int l = 0;
    if (step != 0.0f) l = std::clamp(NearestInt(x[i] / step), -half_range, half_range - 1);
    levels[i] = static_cast<uint8_t>(l + half_range);
    const double diff = static_cast<double>(step * static_cast<float>(l)) - x[i];
    error += weights[i] * diff * diff;
  }
  return error;
}

}  // namespace

void QuantizeSymmetricSuperBlock(const float* x, int half_range, int scale_range,
                                 SymmetricSuperBlock* out) {
  constexpr int kGroups = kSuperBlockSize / 16;
  float weights[kGroups][16];
  float scales[kGroups];
  int8_t signed_levels[16];
  float max_scale = 0.0f;  // signed scale of largest magnitude
  for (int j = 0; j < kGroups; ++j) {
    MagnitudeWeights(x + 16 * j, 16, weights[j]);
    scales[j] = FitSymmetricLevels(x + 16 * j, weights[j], 16, half_range, signed_levels);
    if (std::fabs(scales[j]) > std::fabs(max_scale)) max_scale = scales[j];
  }
  *out = SymmetricSuperBlock{};
  if (max_scale == 0.0f) return;  // all zeros: d = 0 and every level encodes 0

  const float inv_scale = -static_cast<float>(scale_range) / max_scale;
  out->d = FloatToHalf(1.0f / inv_scale);
  const float d = HalfToFloat(out->d);
  uint8_t trial[16];
  for (int j = 0; j < kGroups; ++j) {
    // Try the neighbours of the rounded scale against the real
    // dequantization; rounding alone can cost a step.
    const int rounded =
        std::clamp(NearestInt(inv_scale * scales[j]), -scale_range, scale_range - 1);
    double best_error = -1.0;
    for (int s = std::max(-scale_range, rounded - 1); s <= std::min(scale_range - 1, rounded + 1);
         ++s) {
      const double error = QuantizeSymmetricGroup(x + 16 * j, weights[j], d, s, half_range, trial);
      if (best_error < 0.0 || error < best_error) {
        best_error = error;
        out->scales[j] = s;
        std::copy(trial, trial + 16, out->levels + 16 * j);
      }
    }
  }
}

int NearestIq4Code(float v) {
  // kIq4Values is increasing: the code is where v falls between midpoints.
  int code = 0;
  while (code < 15 && v > 0.5f * (kIq4Values[code] + kIq4Values[code + 1])) ++code;
  return code;
}

float FitIq4Group(const float* x, const float* weights, int n, uint8_t* codes) {
  KVMESH_CHECK(n > 0 && n <= kMaxGroup);
  float amax = 0.0f;
  float max = 0.0f;  // signed value of largest magnitude (first one wins)
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  }
  std::fill(codes, codes + n, static_cast<uint8_t>(NearestIq4Code(0.0f)));
  if (amax < kZeroGroupMagnitude) return 0.0f;

  // Candidate inverse scales put the largest value at or near the table's
  // wide negative end (-127); each one's levels get their least-squares scale.
  double best_gain = -1.0;
  float best_scale = 0.0f;
  uint8_t trial[kMaxGroup];
  auto try_inverse = [&](float inv_scale) {
    double sum_xv = 0, sum_vv = 0;
    for (int i = 0; i < n; ++i) {
      trial[i] = static_cast<uint8_t>(NearestIq4Code(inv_scale * x[i]));
      const double v = kIq4Values[trial[i]];
      sum_xv += static_cast<double>(weights[i]) * x[i] * v;
      sum_vv += static_cast<double>(weights[i]) * v * v;
    }
    if (sum_vv <= 0.0) return false;
    const double gain = sum_xv * sum_xv / sum_vv;
    if (!(gain > best_gain)) return false;
    best_gain = gain;
    best_scale = static_cast<float>(sum_xv / sum_vv);
    std::copy(trial, trial + n, codes);
    return true;
  };
  for (int k = -10; k <= 10; ++k) try_inverse(-(127.0f + 1.5f * k) / max);
  for (int round = 0; round < kMaxPolishRounds && best_scale != 0.0f; ++round) {
    if (!try_inverse(1.0f / best_scale)) break;
  }
  return best_scale;
}

}  // namespace kvmesh::kernels
