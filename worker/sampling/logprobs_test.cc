#include "worker/sampling/logprobs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace kvmesh {
namespace {

TEST(LogprobScorerTest, LogSoftmaxOfTheRawLogits) {
  const std::vector<float> logits = {1.0f, 3.0f, 2.0f, 3.0f};
  double z = 0;
  for (float l : logits) z += std::exp(l);
  LogprobScorer scorer;
  const TokenLogprob lp = scorer.Score(logits.data(), 4, 2, 3);
  EXPECT_EQ(lp.token, 2);
  EXPECT_NEAR(lp.logprob, 2.0 - std::log(z), 1e-6);
  ASSERT_EQ(lp.top.size(), 3u);
  // Most likely first; the tie between 1 and 3 goes to the lower id.
  EXPECT_EQ(lp.top[0].first, 1);
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 2);
  EXPECT_NEAR(lp.top[0].second, 3.0 - std::log(z), 1e-6);
  EXPECT_FLOAT_EQ(lp.top[2].second, lp.logprob);
}

TEST(LogprobScorerTest, TopIsClampedToTheVocabularyAndTheLimit) {
  std::vector<float> logits(40);
  for (int i = 0; i < 40; ++i) logits[i] = static_cast<float>(i);
  LogprobScorer scorer;
  EXPECT_EQ(scorer.Score(logits.data(), 40, 0, 100).top.size(),
            static_cast<size_t>(kMaxTopLogprobs));
  EXPECT_EQ(scorer.Score(logits.data(), 3, 0, 10).top.size(), 3u);
  EXPECT_TRUE(scorer.Score(logits.data(), 40, 0, 0).top.empty());
}

TEST(LogprobScorerTest, LargeLogitsDoNotOverflow) {
  const std::vector<float> logits = {1000.0f, 999.0f};
  LogprobScorer scorer;
  const TokenLogprob lp = scorer.Score(logits.data(), 2, 0, 0);
  EXPECT_NEAR(lp.logprob, -std::log1p(std::exp(-1.0)), 1e-5);
}

}  // namespace
}  // namespace kvmesh
