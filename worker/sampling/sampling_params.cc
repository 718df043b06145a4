#include "worker/sampling/sampling_params.h"

#include <cmath>

namespace kvmesh {
namespace {

Status Bad(const std::string& field, const std::string& what) {
  return InvalidArgumentError("sampling parameter " + field + " " + what);
}

}  // namespace

Status SamplingParams::Validate() const {
  if (!std::isfinite(temperature) || temperature < 0.0f || temperature > 100.0f) {
    return Bad("temperature", "must be in [0, 100], got " + std::to_string(temperature));
  }
  if (top_k < 0) return Bad("top_k", "must be >= 0, got " + std::to_string(top_k));
  if (!std::isfinite(top_p) || top_p <= 0.0f || top_p > 1.0f) {
    return Bad("top_p", "must be in (0, 1], got " + std::to_string(top_p));
  }
  if (!std::isfinite(min_p) || min_p < 0.0f || min_p > 1.0f) {
    return Bad("min_p", "must be in [0, 1], got " + std::to_string(min_p));
  }
  if (!std::isfinite(repeat_penalty) || repeat_penalty <= 0.0f || repeat_penalty > 10.0f) {
    return Bad("repeat_penalty", "must be in (0, 10], got " + std::to_string(repeat_penalty));
  }
  if (repeat_last_n < 0) return Bad("repeat_last_n", "must be >= 0");
  if (!std::isfinite(presence_penalty) || std::fabs(presence_penalty) > 2.0f) {
    return Bad("presence_penalty", "must be in [-2, 2], got " + std::to_string(presence_penalty));
  }
  if (!std::isfinite(frequency_penalty) || std::fabs(frequency_penalty) > 2.0f) {
    return Bad("frequency_penalty", "must be in [-2, 2], got " + std::to_string(frequency_penalty));
  }
  if (max_tokens < 0) return Bad("max_tokens", "must be >= 0, got " + std::to_string(max_tokens));
  if (logit_bias.size() > 1024) return Bad("logit_bias", "allows at most 1024 tokens");
  for (const auto& [id, bias] : logit_bias) {
    if (id < 0) return Bad("logit_bias", "token ids must be >= 0, got " + std::to_string(id));
    if (!std::isfinite(bias) || std::fabs(bias) > 100.0f) {
      return Bad("logit_bias", "values must be in [-100, 100], got " + std::to_string(bias) +
                                   " for token " + std::to_string(id));
    }
  }
  if (stop.size() > 16) return Bad("stop", "allows at most 16 strings");
  for (const std::string& s : stop) {
    if (s.empty()) return Bad("stop", "strings must not be empty");
    if (s.size() > 256) return Bad("stop", "strings must be at most 256 bytes");
  }
  return Status::Ok();
}

}  // namespace kvmesh
