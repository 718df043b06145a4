// One sequence of forward steps that exercises an executor the way the
// engine does, shared by the tests that compare executors and plans: prefill
// of A in two chunks (every logit of the first), three decodes, B (a prefix
// hit on A's first two blocks) batched with A's decode, then B recomputed
// whole in fresh blocks, as after a preemption. Blocks 0-9 are used.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "worker/runtime/model_executor.h"

namespace kvmesh::testing {

// Deterministic pseudo-random token ids in 2..n_vocab-1.
inline std::vector<int32_t> ScenarioTokens(int n, int n_vocab, uint32_t seed) {
  std::vector<int32_t> t(n);
  uint32_t x = seed;
  for (int& v : t) {
    x = x * 1664525u + 1013904223u;
    v = 2 + static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(n_vocab - 2));
  }
  return t;
}

// The logits of each step.
inline std::vector<std::vector<float>> RunForwardScenario(ModelExecutor& exec, int n_vocab) {
  std::vector<std::vector<float>> logits;
  const std::vector<int32_t> a = ScenarioTokens(44, n_vocab, 1);
  std::vector<int32_t> b(a.begin(), a.begin() + 32);
  for (int32_t t : ScenarioTokens(18, n_vocab, 2)) b.push_back(t);
  const std::vector<int32_t> a_blocks = {0, 1, 2, 9};
  const std::vector<int32_t> b_blocks = {0, 1, 3, 4};
  const std::vector<int32_t> b_fresh = {5, 6, 7, 8};
  auto forward = [&](const ForwardBatch& batch) {
    ForwardOutput out;
    Status s = exec.Forward(batch, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    logits.push_back(out.logits);
  };
  ForwardBatch batch;
  batch.tokens.assign(a.begin(), a.begin() + 24);
  batch.sequences.push_back({0, 24, 0, a_blocks, LogitsMode::kAll});
  forward(batch);
  batch.tokens.assign(a.begin() + 24, a.begin() + 40);
  batch.sequences = {{0, 16, 24, a_blocks, LogitsMode::kLast}};
  forward(batch);
  for (int pos = 40; pos < 43; ++pos) {
    batch.tokens = {a[pos]};
    batch.sequences = {{0, 1, pos, a_blocks, LogitsMode::kLast}};
    forward(batch);
  }
  batch.tokens.assign(b.begin() + 32, b.end());
  batch.tokens.push_back(a[43]);
  batch.sequences = {{0, 18, 32, b_blocks, LogitsMode::kAll},
                     {18, 1, 43, a_blocks, LogitsMode::kLast}};
  forward(batch);
  batch.tokens = b;
  batch.sequences = {{0, static_cast<int32_t>(b.size()), 0, b_fresh, LogitsMode::kAll}};
  forward(batch);
  return logits;
}

}  // namespace kvmesh::testing
