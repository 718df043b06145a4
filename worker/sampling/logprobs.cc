#include "worker/sampling/logprobs.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvmesh {

TokenLogprob LogprobScorer::Score(const float* logits, int n_vocab, int32_t token, int top_n) {
  // log p(t) = l_t - (max + log Σ exp(l_i - max)), summed in double so a
  // 128k vocabulary loses nothing to rounding.
  float max = logits[0];
  for (int i = 1; i < n_vocab; ++i) max = std::max(max, logits[i]);
  double sum = 0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_z = max + std::log(sum);
  auto logprob = [&](int32_t id) { return static_cast<float>(logits[id] - log_z); };

  TokenLogprob out;
  out.token = token;
  out.logprob = logprob(token);
  top_n = std::clamp(top_n, 0, std::min(kMaxTopLogprobs, n_vocab));
  if (top_n > 0) {
    order_.resize(n_vocab);
    std::iota(order_.begin(), order_.end(), 0);
    auto more_likely = [logits](int32_t a, int32_t b) {
      return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
    };
    std::partial_sort(order_.begin(), order_.begin() + top_n, order_.end(), more_likely);
    out.top.reserve(top_n);
    for (int i = 0; i < top_n; ++i) out.top.emplace_back(order_[i], logprob(order_[i]));
  }
  return out;
}

}  // namespace kvmesh
