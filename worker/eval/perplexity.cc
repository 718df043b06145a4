#include "worker/eval/perplexity.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace kvmesh {
namespace {

int Argmax(const float* v, int n) { return static_cast<int>(std::max_element(v, v + n) - v); }

}  // namespace

StatusOr<PerplexityPlan> PlanPerplexity(int64_t n_tokens, int n_ctx) {
  if (n_ctx < 4) {
    return InvalidArgumentError("context " + std::to_string(n_ctx) +
                                " is too small for perplexity; use -c 4 or more");
  }
  if (n_tokens < 2 * static_cast<int64_t>(n_ctx)) {
    return InvalidArgumentError("the text tokenizes to " + std::to_string(n_tokens) +
                                " tokens; perplexity with a context of " + std::to_string(n_ctx) +
                                " needs at least " + std::to_string(2 * n_ctx) +
                                " (use a longer text or a smaller -c)");
  }
  PerplexityPlan plan;
  plan.n_ctx = n_ctx;
  plan.n_chunk = static_cast<int>(n_tokens / n_ctx);
  plan.first = n_ctx / 2;
  return plan;
}

std::vector<int32_t> ChunkTokens(std::span<const int32_t> tokens, const PerplexityPlan& plan,
                                 int chunk, int32_t bos) {
  const auto begin = tokens.begin() + static_cast<int64_t>(chunk) * plan.n_ctx;
  std::vector<int32_t> out(begin, begin + plan.n_ctx);
  if (bos >= 0) out[0] = bos;
  return out;
}

Status ChunkLogits(Executor& executor, std::span<const int32_t> chunk_tokens,
                   const PerplexityPlan& plan, std::vector<float>* logits) {
  const int block_size = executor.kv_layout().block_size;
  const int64_t blocks = (plan.n_ctx + block_size - 1) / block_size;
  if (blocks > executor.num_blocks()) {
    return InvalidArgumentError("a chunk of " + std::to_string(plan.n_ctx) + " tokens needs " +
                                std::to_string(blocks) + " KV blocks; the executor has " +
                                std::to_string(executor.num_blocks()));
  }
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  ForwardOutput out;
  // The unscored first half needs no logits; the rest gets every row.
  ForwardBatch head;
  head.tokens.assign(chunk_tokens.begin(), chunk_tokens.begin() + plan.first);
  head.sequences.push_back({0, plan.first, 0, table, LogitsMode::kNone});
  RETURN_IF_ERROR(executor.Forward(head, &out));
  ForwardBatch tail;
  tail.tokens.assign(chunk_tokens.begin() + plan.first, chunk_tokens.end());
  tail.sequences.push_back({0, plan.n_ctx - plan.first, plan.first, table, LogitsMode::kAll});
  RETURN_IF_ERROR(executor.Forward(tail, &out));
  const size_t rows = static_cast<size_t>(plan.scored_per_chunk());
  logits->assign(out.logits.begin(), out.logits.begin() + rows * out.n_vocab);
  return Status::Ok();
}

void LogSoftmax(const float* logits, int n_vocab, float* log_probs) {
  const float max = *std::max_element(logits, logits + n_vocab);
  double sum = 0.0;
  for (int i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max);
  const double log_sum = max + std::log(sum);
  for (int i = 0; i < n_vocab; ++i) {
    log_probs[i] = static_cast<float>(static_cast<double>(logits[i]) - log_sum);
  }
}

void ScoreChunk(std::span<const float> logits, std::span<const int32_t> chunk_tokens,
                const PerplexityPlan& plan, int n_vocab, const float* base_log_probs, NllStats* nll,
                KlStats* kl, std::vector<float>* log_probs) {
  const size_t row_size = static_cast<size_t>(n_vocab);
  log_probs->resize(static_cast<size_t>(plan.scored_per_chunk()) * row_size);
  for (int r = 0; r < plan.scored_per_chunk(); ++r) {
    float* lp = log_probs->data() + r * row_size;
    LogSoftmax(logits.data() + r * row_size, n_vocab, lp);
    nll->Add(-static_cast<double>(lp[chunk_tokens[plan.first + r + 1]]));
    if (base_log_probs != nullptr) kl->Add(base_log_probs + r * row_size, lp, n_vocab);
  }
}

double NllStats::Ppl() const { return std::exp(MeanNll()); }

double NllStats::PplError() const {
  if (count_ < 2) return 0.0;
  const double mean = MeanNll();
  const double variance = sum_squares_ / count_ - mean * mean;
  if (variance <= 0.0) return 0.0;
  return Ppl() * std::sqrt(variance / (count_ - 1));
}

void KlStats::Add(const float* base_log_probs, const float* log_probs, int n_vocab) {
  double kl = 0.0;
  for (int i = 0; i < n_vocab; ++i) {
    const double base = base_log_probs[i];
    kl += std::exp(base) * (base - static_cast<double>(log_probs[i]));
  }
  values_.push_back(kl);
  sum_ += kl;
  sum_squares_ += kl * kl;
  if (Argmax(base_log_probs, n_vocab) == Argmax(log_probs, n_vocab)) ++same_top_;
}

double KlStats::MeanKl() const { return values_.empty() ? 0.0 : sum_ / values_.size(); }

double KlStats::MeanKlError() const {
  const double n = static_cast<double>(values_.size());
  if (n < 2) return 0.0;
  const double mean = MeanKl();
  const double variance = sum_squares_ / n - mean * mean;
  return variance > 0.0 ? std::sqrt(variance / (n - 1)) : 0.0;
}

double KlStats::MaxKl() const {
  return values_.empty() ? 0.0 : *std::max_element(values_.begin(), values_.end());
}

double KlStats::KlQuantile(double fraction) const {
  if (values_.empty()) return 0.0;
  std::vector<double> sorted = values_;
  std::sort(sorted.begin(), sorted.end());
  if (fraction <= 0.0) return sorted.front();
  if (fraction >= 1.0) return sorted.back();
  const double position = fraction * (sorted.size() - 1);
  const size_t index = static_cast<size_t>(position);
  const double frac = position - index;
  const size_t next = std::min(index + 1, sorted.size() - 1);
  return (1.0 - frac) * sorted[index] + frac * sorted[next];
}

double KlStats::SameTop() const {
  return values_.empty() ? 0.0 : static_cast<double>(same_top_) / values_.size();
}

double KlStats::SameTopError() const {
  const double n = static_cast<double>(values_.size());
  if (n < 2) return 0.0;
  const double p = SameTop();
  return std::sqrt(p * (1.0 - p) / (n - 1));
}

}  // namespace kvmesh
