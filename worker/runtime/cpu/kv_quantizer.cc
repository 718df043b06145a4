#include "worker/runtime/cpu/kv_quantizer.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/reference_kernels.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh {
namespace {

using kernels::BlockQ4_0;
using kernels::kLegacyBlockSize;

constexpr int kBlock = kLegacyBlockSize;

// Rounds x·inv to the nearest of the 16 levels -8..7 (as level + 8 in 0..15).
// Truncating v + 8.5 rounds v to nearest for v >= -8.5, and clamping in
// float first keeps the whole thing branch-free, so the loops vectorise.
inline int Level(float x, float inv) {
  const float v = std::min(std::max(x * inv + 8.5f, 0.0f), 15.5f);
  return static_cast<int>(v);
}

// Levels for the stored (f16-rounded) scale `d`, and the block's squared
// error with them.
float EncodeBlock(const float* x, float d, uint8_t* levels, uint16_t* stored_d) {
  *stored_d = FloatToHalf(d);
  const float dh = HalfToFloat(*stored_d);
  const float inv = dh != 0.0f ? 1.0f / dh : 0.0f;
  float error = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    const int level = Level(x[j], inv);
    levels[j] = static_cast<uint8_t>(level);
    const float r = x[j] - dh * static_cast<float>(level - 8);
    error += r * r;
  }
  return error;
}

// For the levels x·inv rounds to, the least-squares scale is Σxl / Σl² and
// the error it leaves is Σx² - (Σxl)² / Σl²; returns (Σxl)² / Σl² (larger is
// better) and the scale.
float FitScale(const float* x, float inv, float* scale) {
  // Eight independent partial sums, so the compiler can use vector lanes
  // without reassociating a single float sum.
  constexpr int kLanes = 8;
  float xl[kLanes] = {}, ll[kLanes] = {};
  for (int j = 0; j < kBlock; j += kLanes) {
    for (int i = 0; i < kLanes; ++i) {
      const float l = static_cast<float>(Level(x[j + i], inv) - 8);
      xl[i] += x[j + i] * l;
      ll[i] += l * l;
    }
  }
  float sum_xl = 0.0f, sum_ll = 0.0f;
  for (int i = 0; i < kLanes; ++i) {
    sum_xl += xl[i];
    sum_ll += ll[i];
  }
  if (sum_ll <= 0.0f) return -1.0f;
  *scale = sum_xl / sum_ll;
  return sum_xl * sum_xl / sum_ll;
}

void QuantizeBlockMinError(const float* x, BlockQ4_0* out) {
  float amax = 0.0f;
  float extreme = 0.0f;  // signed value of largest magnitude, first one wins
  for (int j = 0; j < kBlock; ++j) {
    if (std::fabs(x[j]) > amax) {
      amax = std::fabs(x[j]);
      extreme = x[j];
    }
  }
  uint8_t best[kBlock];
  uint16_t best_d = 0;
  // The reference choice (extreme → level 0) is the fallback, so the result
  // is never worse than it.
  float best_error = EncodeBlock(x, extreme / -8.0f, best, &best_d);
  if (amax > 0.0f) {
    // Put the extreme at other points of the -8..7 range; keep the level
    // pattern whose least-squares scale fits best.
    float best_fit = -1.0f, best_scale = 0.0f;
    auto consider = [&](float s) {
      float scale = 0.0f;
      const float fit = FitScale(x, s / extreme, &scale);
      if (fit > best_fit) {
        best_fit = fit;
        best_scale = scale;
      }
    };
    for (int k = -4; k <= 8; ++k) consider(-8.0f + 0.25f * k);
    for (int k = -1; k <= 2; ++k) consider(7.0f + 0.5f * k);
    uint8_t trial[kBlock];
    uint16_t trial_d = 0;
    const float error = EncodeBlock(x, best_scale, trial, &trial_d);
    if (error < best_error) {
      best_error = error;
      best_d = trial_d;
      std::memcpy(best, trial, kBlock);
    }
  }
  out->d = best_d;
  for (int j = 0; j < kBlock / 2; ++j) {
    out->qs[j] = static_cast<uint8_t>(best[j] | (best[j + kBlock / 2] << 4));
  }
}

}  // namespace

void QuantizeRowQ4_0MinError(const float* src, void* dst, int64_t n) {
  BlockQ4_0* blocks = static_cast<BlockQ4_0*>(dst);
  for (int64_t b = 0; b < n / kBlock; ++b) QuantizeBlockMinError(src + b * kBlock, &blocks[b]);
}

double Q4_0SquaredError(const float* src, const void* encoded, int64_t n) {
  const BlockQ4_0* blocks = static_cast<const BlockQ4_0*>(encoded);
  double error = 0.0;
  float decoded[kBlock];
  for (int64_t b = 0; b < n / kBlock; ++b) {
    kernels::DequantizeRowQ4_0(&blocks[b], decoded, kBlock);
    for (int j = 0; j < kBlock; ++j) {
      const double r = static_cast<double>(src[b * kBlock + j]) - decoded[j];
      error += r * r;
    }
  }
  return error;
}

KvEncodeFn GetKvEncoder(TensorType type, KvRounding rounding) {
  if (type == TensorType::kQ4_0 && rounding == KvRounding::kMinError) {
    return QuantizeRowQ4_0MinError;
  }
  const kernels::TypeTraits* traits = kernels::GetTypeTraits(type);
  return traits != nullptr ? traits->from_float : nullptr;
}

}  // namespace kvmesh
