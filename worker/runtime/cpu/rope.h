// Rotary position embedding tables and their application.
//
// RopeTable precomputes cos/sin for each position of a batch, following the
// same float recurrences as the reference implementation the GGUF ecosystem
// uses (theta multiplied up by base^(-2/n_rot) per pair, frequency factors,
// linear scaling and the YaRN ramp), so rotated Q/K match it closely.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "worker/model/model_config.h"

namespace kvmesh {

class RopeTable {
 public:
  // `freq_factors` is empty or holds n_rot/2 divisors of the pair frequencies.
  RopeTable(const RopeConfig& config, std::span<const float> freq_factors);

  // Fills the table for these positions (one row of n_rot/2 (cos, sin) per
  // position).
  void Compute(std::span<const int32_t> positions);

  // Rotates one head vector in place with the table row of `index`.
  void Apply(int64_t index, float* head) const;

  // The table of the last Compute ([positions][n_rot/2][cos, sin]), for
  // backends that rotate elsewhere (the CUDA executor uploads it).
  std::span<const float> table() const { return cos_sin_; }
  const RopeConfig& config() const { return config_; }

 private:
  RopeConfig config_;
  std::vector<float> freq_factors_;
  float corr_low_ = 0.0f;
  float corr_high_ = 0.0f;
  std::vector<float> cos_sin_;  // [positions][n_rot/2][2]
};

}  // namespace kvmesh
