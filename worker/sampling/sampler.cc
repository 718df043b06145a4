#include "worker/sampling/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace kvmesh {

Sampler::Sampler(const SamplingParams& params, int n_vocab)
    : params_(params),
      n_vocab_(n_vocab),
      seed_(params.seed ? *params.seed
                        : std::random_device{}() * 0x9e3779b97f4a7c15ull ^ std::random_device{}()),
      rng_(seed_),
      counts_(n_vocab, 0) {}

double Sampler::NextUniform() {
  // 53 random bits → a double in [0, 1), independent of the library's
  // distribution implementations so a seed means the same thing everywhere.
  return static_cast<double>(rng_() >> 11) * 0x1.0p-53;
}

void Sampler::ApplyPenalties(std::span<const int32_t> history) {
  const bool any = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                   params_.frequency_penalty != 0.0f;
  if (!any || params_.repeat_last_n == 0 || history.empty()) return;
  const size_t window = std::min(history.size(), static_cast<size_t>(params_.repeat_last_n));
  const auto recent = history.subspan(history.size() - window);
  for (int32_t t : recent) {
    if (t >= 0 && t < n_vocab_) ++counts_[t];
  }
  for (int32_t t : recent) {
    if (t < 0 || t >= n_vocab_ || counts_[t] == 0) continue;
    float& logit = candidates_[t].logit;
    if (std::isinf(logit)) continue;  // masked (a grammar) stays masked; nothing else is infinite
    if (params_.repeat_penalty != 1.0f) {
      logit = logit > 0 ? logit / params_.repeat_penalty : logit * params_.repeat_penalty;
    }
    logit -= static_cast<float>(counts_[t]) * params_.frequency_penalty + params_.presence_penalty;
    // A penalty far below 1 can push a logit past the float range: keep it
    // finite, so the probabilities below stay numbers (an infinite logit
    // would make them NaN and the draw fall through to a masked token).
    logit =
        std::clamp(logit, -std::numeric_limits<float>::max(), std::numeric_limits<float>::max());
    counts_[t] = 0;  // each distinct token is penalised once
  }
}

int32_t Sampler::Sample(const float* logits, std::span<const int32_t> history) {
  const bool penalties = params_.repeat_penalty != 1.0f || params_.presence_penalty != 0.0f ||
                         params_.frequency_penalty != 0.0f;
  if (params_.greedy() && !penalties && params_.logit_bias.empty()) {
    // The first of the largest logits: what the general path below picks
    // (lowest id among ties), without copying the vocabulary.
    int32_t best = 0;
    for (int i = 1; i < n_vocab_; ++i) {
      if (logits[i] > logits[best]) best = i;
    }
    return best;
  }
  candidates_.resize(n_vocab_);
  for (int i = 0; i < n_vocab_; ++i) candidates_[i] = {i, logits[i]};
  // Bias first, then penalties (docs/api.md).
  for (const auto& [id, bias] : params_.logit_bias) {
    if (id < n_vocab_) candidates_[id].logit += bias;
  }
  ApplyPenalties(history);

  auto by_logit = [](const Candidate& a, const Candidate& b) {
    return a.logit > b.logit || (a.logit == b.logit && a.id < b.id);
  };
  if (params_.greedy()) {
    return std::min_element(candidates_.begin(), candidates_.end(), by_logit)->id;
  }

  size_t n = candidates_.size();
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    n = params_.top_k;
    std::partial_sort(candidates_.begin(), candidates_.begin() + n, candidates_.end(), by_logit);
  } else {
    std::sort(candidates_.begin(), candidates_.end(), by_logit);
  }
  candidates_.resize(n);

  // Probabilities at temperature 1 for the top-p and min-p cuts.
  std::vector<double> probs(n);
  const double max_logit = candidates_[0].logit;
  double sum = 0.0;
  for (size_t i = 0; i < n; ++i) {
    probs[i] = std::exp(static_cast<double>(candidates_[i].logit) - max_logit);
    sum += probs[i];
  }
  if (params_.top_p < 1.0f) {
    double cumulative = 0.0;
    size_t keep = n;
    for (size_t i = 0; i < n; ++i) {
      cumulative += probs[i] / sum;
      if (cumulative >= params_.top_p) {
        keep = i + 1;
        break;
      }
    }
    n = keep;
  }
  if (params_.min_p > 0.0f) {
    // probs[0] is the most likely token's unnormalised probability (1.0).
    size_t keep = 1;
    while (keep < n && probs[keep] >= params_.min_p * probs[0]) ++keep;
    n = keep;
  }

  // Temperature, then draw.
  std::vector<double> weights(n);
  double total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    weights[i] =
        std::exp((static_cast<double>(candidates_[i].logit) - max_logit) / params_.temperature);
    total += weights[i];
  }
  const double r = NextUniform() * total;
  double acc = 0.0;
  for (size_t i = 0; i < n; ++i) {
    acc += weights[i];
    if (r < acc) return candidates_[i].id;
  }
  // Rounding left r at the total: the last candidate with any weight (never
  // one of weight 0, such as a token a grammar masked).
  for (size_t i = n; i-- > 0;) {
    if (weights[i] > 0) return candidates_[i].id;
  }
  return candidates_[0].id;
}

}  // namespace kvmesh
