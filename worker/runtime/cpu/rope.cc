#include "worker/runtime/cpu/rope.h"

#include <algorithm>
#include <cmath>
#include <numbers>

namespace kvmesh {
namespace {

// The pair index at which a rotation of `n_rotations` full turns over the
// original context happens (YaRN's correction dimension).
float CorrectionDim(int n_rot, int n_ctx_orig, float n_rotations, float base) {
  return n_rot * std::log(n_ctx_orig / (n_rotations * 2.0f * std::numbers::pi_v<float>)) /
         (2.0f * std::log(base));
}

float YarnRamp(float low, float high, int i0) {
  const float y = (i0 / 2 - low) / std::max(0.001f, high - low);
  return 1.0f - std::min(1.0f, std::max(0.0f, y));
}

}  // namespace

RopeTable::RopeTable(const RopeConfig& config, std::span<const float> freq_factors)
    : config_(config), freq_factors_(freq_factors.begin(), freq_factors.end()) {
  if (config_.yarn_ext_factor != 0.0f && config_.original_context > 0) {
    const float start = std::floor(CorrectionDim(config_.n_rot, config_.original_context,
                                                 config_.yarn_beta_fast, config_.freq_base));
    const float end = std::ceil(CorrectionDim(config_.n_rot, config_.original_context,
                                              config_.yarn_beta_slow, config_.freq_base));
    corr_low_ = std::max(0.0f, start);
    corr_high_ = std::min(static_cast<float>(config_.n_rot - 1), end);
  }
}

void RopeTable::Compute(std::span<const int32_t> positions) {
  const int pairs = config_.n_rot / 2;
  cos_sin_.resize(positions.size() * pairs * 2);
  const float theta_scale = std::pow(config_.freq_base, -2.0f / config_.n_rot);
  const float freq_scale = config_.freq_scale;
  const float ext = config_.yarn_ext_factor;
  for (size_t p = 0; p < positions.size(); ++p) {
    float theta = static_cast<float>(positions[p]);
    float* row = cos_sin_.data() + p * pairs * 2;
    for (int i = 0; i < pairs; ++i) {
      const float ff = freq_factors_.empty() ? 1.0f : freq_factors_[i];
      const float theta_extrap = theta / ff;
      float angle = freq_scale * theta_extrap;
      float mscale = config_.yarn_attn_factor;
      if (ext != 0.0f) {
        const float mix = YarnRamp(corr_low_, corr_high_, 2 * i) * ext;
        angle = angle * (1.0f - mix) + theta_extrap * mix;
        mscale *= 1.0f + 0.1f * std::log(1.0f / freq_scale);
      }
      row[2 * i] = std::cos(angle) * mscale;
      row[2 * i + 1] = std::sin(angle) * mscale;
      theta *= theta_scale;
    }
  }
}

void RopeTable::Apply(int64_t index, float* head) const {
  const int pairs = config_.n_rot / 2;
  const float* row = cos_sin_.data() + index * pairs * 2;
  for (int i = 0; i < pairs; ++i) {
    const float c = row[2 * i];
    const float s = row[2 * i + 1];
    float* a;
    float* b;
    if (config_.style == RopeStyle::kAdjacentPairs) {
      a = head + 2 * i;
      b = head + 2 * i + 1;
    } else {
      a = head + i;
      b = head + i + pairs;
    }
    const float x0 = *a;
    const float x1 = *b;
    *a = x0 * c - x1 * s;
    *b = x0 * s + x1 * c;
  }
}

}  // namespace kvmesh
