// Sampler: picks the next token from a row of logits.
//
// The chain, in order: repetition/presence/frequency penalties over the last
// repeat_last_n tokens → (greedy: argmax) → top-k → top-p → min-p →
// temperature → a draw from the resulting distribution with the sampler's own
// seeded generator. A Sampler belongs to one request and is used by one thread
// at a time; its state is the random generator.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <vector>

#include "worker/sampling/sampling_params.h"

namespace kvmesh {

class Sampler {
 public:
  // `params` must be valid (SamplingParams::Validate()).
  Sampler(const SamplingParams& params, int n_vocab);

  // The seed in use (the given one, or the one drawn at construction).
  uint64_t seed() const { return seed_; }

  // `history` is every token of the sequence so far (prompt and generated).
  int32_t Sample(const float* logits, std::span<const int32_t> history);

 private:
  struct Candidate {
    int32_t id;
    float logit;
  };
  void ApplyPenalties(std::span<const int32_t> history);
  double NextUniform();  // in [0, 1)

  SamplingParams params_;
  int n_vocab_;
  uint64_t seed_;
  std::mt19937_64 rng_;
  std::vector<Candidate> candidates_;
  std::vector<int32_t> counts_;  // occurrences in the penalty window, by token
};

}  // namespace kvmesh
