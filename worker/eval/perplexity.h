// Perplexity and KL divergence in llama-perplexity's convention, so kvmesh's
// numbers compare directly with llama.cpp's on the same text:
//
//  - the whole text is tokenized once, with BOS;
//  - it is cut into n_chunk = n_tokens / n_ctx chunks of n_ctx tokens (the
//    tail is dropped); each chunk is evaluated from an empty cache with its
//    first token replaced by BOS;
//  - only the second half is scored: logits rows first = n_ctx / 2 up to
//    n_ctx - 2, each predicting the next token of the chunk, so every scored
//    token has at least n_ctx / 2 tokens of context. That is n_ctx - 1 - first
//    scored tokens per chunk (127 for -c 256);
//  - PPL = exp(mean NLL), and its error is PPL times the standard error of
//    the mean NLL;
//  - KL(base ‖ current) per scored position, averaged; "same top" is the
//    share of positions where both distributions have the same argmax.
//
// Pure computation plus ChunkLogits, which drives any Executor. Not
// thread-safe; one instance per run.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/status.h"
#include "worker/runtime/executor.h"

namespace kvmesh {

struct PerplexityPlan {
  int n_ctx = 0;
  int n_chunk = 0;
  int first = 0;  // first scored logits row of a chunk (n_ctx / 2)

  int scored_per_chunk() const { return n_ctx - 1 - first; }
};

// Needs at least 2 * n_ctx tokens (as llama-perplexity does) and n_ctx >= 4.
StatusOr<PerplexityPlan> PlanPerplexity(int64_t n_tokens, int n_ctx);

// The n_ctx tokens of chunk `chunk`, the first replaced by `bos` if bos >= 0.
std::vector<int32_t> ChunkTokens(std::span<const int32_t> tokens, const PerplexityPlan& plan,
                                 int chunk, int32_t bos);

// Evaluates one chunk from position 0 on blocks 0, 1, … of `executor` and
// returns the logits rows of positions [plan.first, plan.n_ctx - 1), n_vocab
// floats each. Positions before `first` are computed without logits.
Status ChunkLogits(Executor& executor, std::span<const int32_t> chunk_tokens,
                   const PerplexityPlan& plan, std::vector<float>* logits);

// log_probs[i] = logits[i] - log Σ exp(logits), summed in double.
void LogSoftmax(const float* logits, int n_vocab, float* log_probs);

class NllStats;
class KlStats;

// Scores one chunk from ChunkLogits' rows: each row's log-probabilities go
// to `log_probs` (scored_per_chunk × n_vocab), its next token's NLL to
// `nll`, and, when `base_log_probs` (same shape) is given, its KL and top
// token to `kl`.
void ScoreChunk(std::span<const float> logits, std::span<const int32_t> chunk_tokens,
                const PerplexityPlan& plan, int n_vocab, const float* base_log_probs, NllStats* nll,
                KlStats* kl, std::vector<float>* log_probs);

// Running mean of negative log-likelihoods.
class NllStats {
 public:
  void Add(double nll) {
    sum_ += nll;
    sum_squares_ += nll * nll;
    ++count_;
  }
  int64_t count() const { return count_; }
  double MeanNll() const { return count_ > 0 ? sum_ / count_ : 0.0; }
  double Ppl() const;
  // PPL × standard error of the mean NLL (0 with fewer than two values).
  double PplError() const;

 private:
  double sum_ = 0.0;
  double sum_squares_ = 0.0;
  int64_t count_ = 0;
};

// KL divergence and top-token agreement against base log-probabilities.
class KlStats {
 public:
  // One position: `base_log_probs` from the base run, `log_probs` from this
  // one (both normalised, n_vocab values).
  void Add(const float* base_log_probs, const float* log_probs, int n_vocab);

  int64_t count() const { return static_cast<int64_t>(values_.size()); }
  double MeanKl() const;
  double MeanKlError() const;  // standard error of the mean
  double MaxKl() const;
  // The `fraction` quantile of per-position KL (0.999 → 99.9%), linearly
  // interpolated like llama-perplexity's.
  double KlQuantile(double fraction) const;
  double SameTop() const;       // share in [0, 1]
  double SameTopError() const;  // binomial standard error

 private:
  std::vector<double> values_;
  double sum_ = 0.0;
  double sum_squares_ = 0.0;
  int64_t same_top_ = 0;
};

}  // namespace kvmesh
