// Log-probabilities of tokens under a row of logits: the log-softmax of the
// model's raw logits, before any sampling step changes them (temperature,
// penalties, logit_bias, truncation, grammar masks), as OpenAI's logprobs
// and llama.cpp's report them.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace kvmesh {

inline constexpr int kMaxTopLogprobs = 20;

struct TokenLogprob {
  int32_t token = 0;
  float logprob = 0;
  // The `top_n` most likely tokens at this position, most likely first
  // (ties: lower id first).
  std::vector<std::pair<int32_t, float>> top;
};

class LogprobScorer {
 public:
  // The log-probability of `token` under `logits` (n_vocab values), and the
  // `top_n` (0 … kMaxTopLogprobs) most likely tokens.
  TokenLogprob Score(const float* logits, int n_vocab, int32_t token, int top_n);

 private:
  std::vector<int32_t> order_;  // scratch for the top-n selection
};

}  // namespace kvmesh
