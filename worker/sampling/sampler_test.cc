#include "worker/sampling/sampler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "worker/sampling/stop_matcher.h"

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

SamplingParams Params(float temp, int top_k = 0, float top_p = 1.0f, float min_p = 0.0f) {
  SamplingParams p;
  p.temperature = temp;
  p.top_k = top_k;
  p.top_p = top_p;
  p.min_p = min_p;
  p.seed = 1234;
  return p;
}

TEST(SamplerTest, GreedyPicksArgmaxAndLowestIdOnTies) {
  Sampler s(Params(0.0f), 5);
  const float logits[] = {0.1f, 3.0f, -1.0f, 3.0f, 2.0f};
  EXPECT_EQ(s.Sample(logits, {}), 1);
}

TEST(SamplerTest, RepeatPenaltyCanChangeTheGreedyChoice) {
  SamplingParams p = Params(0.0f);
  p.repeat_penalty = 2.0f;
  Sampler s(p, 3);
  const float logits[] = {3.0f, 2.0f, -1.0f};
  const int32_t history[] = {0};
  // 3.0 / 2 = 1.5 < 2.0: token 1 wins.
  EXPECT_EQ(s.Sample(logits, history), 1);
  EXPECT_EQ(s.Sample(logits, {}), 0);
}

// Found by worker_request_fuzz: a repetition penalty of 1.4e-41 (valid: the
// range is (0, 10]) divided a repeated token's positive logit past the
// float range; its infinite logit made every probability NaN, the draw fell
// through to the last candidate, and that was a token the grammar masked.
TEST(SamplerTest, ATinyRepeatPenaltyNeverSamplesAMaskedToken) {
  const float inf = std::numeric_limits<float>::infinity();
  const float logits[] = {-inf, 2.0f, 1.5f, -inf, 0.5f, -inf};
  const int32_t history[] = {1, 2, 3, 0};
  for (uint64_t seed = 0; seed < 200; ++seed) {
    SamplingParams p = Params(1.0f);
    p.seed = seed;
    p.repeat_penalty = 1.4e-41f;
    Sampler s(p, 6);
    const int32_t token = s.Sample(logits, history);
    ASSERT_TRUE(token == 1 || token == 2 || token == 4) << "seed " << seed << ": " << token;
  }
  // Greedy too, and a frequency penalty on a masked token leaves it masked.
  SamplingParams greedy = Params(0.0f);
  greedy.repeat_penalty = 1.4e-41f;
  greedy.frequency_penalty = -2.0f;
  Sampler g(greedy, 6);
  const int32_t token = g.Sample(logits, history);
  EXPECT_TRUE(token == 1 || token == 2) << token;
}

TEST(SamplerTest, PresenceAndFrequencyPenalties) {
  SamplingParams p = Params(0.0f);
  p.frequency_penalty = 0.6f;
  Sampler s(p, 3);
  const float logits[] = {3.0f, 2.0f, -1.0f};
  const int32_t once[] = {0};
  const int32_t twice[] = {0, 0};
  EXPECT_EQ(s.Sample(logits, once), 0);   // 3.0 - 0.6 = 2.4 > 2.0
  EXPECT_EQ(s.Sample(logits, twice), 1);  // 3.0 - 1.2 = 1.8 < 2.0
}

TEST(SamplerTest, SameSeedSameTokens) {
  std::vector<float> logits(100);
  for (int i = 0; i < 100; ++i) logits[i] = static_cast<float>((i * 37) % 11) * 0.3f;
  Sampler a(Params(1.0f), 100), b(Params(1.0f), 100);
  SamplingParams other = Params(1.0f);
  other.seed = 99;
  Sampler c(other, 100);
  std::vector<int32_t> ta, tb, tc;
  for (int i = 0; i < 50; ++i) {
    ta.push_back(a.Sample(logits.data(), {}));
    tb.push_back(b.Sample(logits.data(), {}));
    tc.push_back(c.Sample(logits.data(), {}));
  }
  EXPECT_EQ(ta, tb);
  EXPECT_NE(ta, tc);
  EXPECT_EQ(a.seed(), 1234u);
}

TEST(SamplerTest, TopKOneIsGreedy) {
  const float logits[] = {0.0f, 1.0f, 5.0f, 4.9f};
  Sampler s(Params(1.5f, 1), 4);
  for (int i = 0; i < 20; ++i) EXPECT_EQ(s.Sample(logits, {}), 2);
}

TEST(SamplerTest, TopPAndMinPCutTheTail) {
  // Probabilities ∝ e^0, e^-1, e^-5, e^-6 → 0.727, 0.268, 0.0049, 0.0018.
  const float logits[] = {0.0f, -1.0f, -5.0f, -6.0f};
  Sampler top_p(Params(1.0f, 0, 0.9f), 4);
  Sampler min_p(Params(1.0f, 0, 1.0f, 0.1f), 4);
  std::map<int, int> seen_p, seen_m;
  for (int i = 0; i < 2000; ++i) {
    seen_p[top_p.Sample(logits, {})]++;
    seen_m[min_p.Sample(logits, {})]++;
  }
  EXPECT_EQ(seen_p.size(), 2u);  // 0.727 < 0.9 ≤ 0.995: tokens 0 and 1 only
  EXPECT_EQ(seen_m.size(), 2u);  // e^-5 < 0.1: tokens 0 and 1 only
  EXPECT_GT(seen_p[0], seen_p[1]);
}

TEST(SamplerTest, DistributionFollowsTemperature) {
  const float logits[] = {0.0f, -1.0f};
  Sampler s(Params(1.0f), 2);
  int zeros = 0;
  for (int i = 0; i < 20000; ++i) zeros += s.Sample(logits, {}) == 0;
  // P(0) = 1 / (1 + e^-1) = 0.731; 20000 draws: sd ≈ 0.003.
  EXPECT_NEAR(zeros / 20000.0, 0.731, 0.015);
}

TEST(SamplingParamsTest, ValidationNamesTheField) {
  SamplingParams p;
  EXPECT_TRUE(p.Validate().ok());
  p.temperature = -1;
  EXPECT_THAT(p.Validate().message(), HasSubstr("temperature"));
  p = SamplingParams();
  p.top_p = 0;
  EXPECT_THAT(p.Validate().message(), HasSubstr("top_p"));
  p = SamplingParams();
  p.max_tokens = -5;
  EXPECT_THAT(p.Validate().message(), HasSubstr("max_tokens"));
  p = SamplingParams();
  p.stop = {""};
  EXPECT_THAT(p.Validate().message(), HasSubstr("stop"));
}

TEST(StopMatcherTest, HoldsBackPossibleStartsAndCutsAtTheStop) {
  StopMatcher m({"\n\n", "END"});
  EXPECT_EQ(m.Push("Hello"), "Hello");
  EXPECT_EQ(m.Push(" wor"), " wor");
  EXPECT_EQ(m.Push("ld\n"), "ld");  // "\n" may start "\n\n"
  EXPECT_EQ(m.Push("E"), "\n");     // "\nE" is not a start; "E" may be
  EXPECT_EQ(m.Push("N"), "");
  EXPECT_FALSE(m.stopped());
  EXPECT_EQ(m.Push("D and more"), "");
  EXPECT_TRUE(m.stopped());
  EXPECT_EQ(m.matched(), "END");
  EXPECT_EQ(m.Push("ignored"), "");
}

TEST(StopMatcherTest, FlushReturnsHeldText) {
  StopMatcher m({"stop"});
  EXPECT_EQ(m.Push("a sto"), "a ");
  EXPECT_EQ(m.Flush(), "sto");
  EXPECT_FALSE(m.stopped());
}

TEST(StopMatcherTest, StopInsideOnePiece) {
  StopMatcher m({"cat"});
  EXPECT_EQ(m.Push("the cat sat"), "the ");
  EXPECT_TRUE(m.stopped());
}

}  // namespace
}  // namespace kvmesh

namespace kvmesh {
namespace {

// logit_bias goes on before penalties and truncation: it can force or ban a
// token, greedy or sampled.
TEST(SamplerTest, LogitBiasForcesAndBans) {
  const float logits[] = {0.1f, 3.0f, -1.0f, 2.5f};
  SamplingParams force = Params(0.0f);
  force.logit_bias = {{2, 100.0f}};
  EXPECT_EQ(Sampler(force, 4).Sample(logits, {}), 2);
  SamplingParams ban = Params(0.0f);
  ban.logit_bias = {{1, -100.0f}};
  EXPECT_EQ(Sampler(ban, 4).Sample(logits, {}), 3);
  SamplingParams sampled = Params(1.0f, /*top_k=*/2);
  sampled.logit_bias = {{1, -100.0f}, {3, -100.0f}};
  Sampler s(sampled, 4);
  for (int i = 0; i < 20; ++i) {
    const int32_t t = s.Sample(logits, {});
    EXPECT_TRUE(t == 0 || t == 2) << t;
  }
  SamplingParams bad = Params(1.0f);
  bad.logit_bias = {{0, 101.0f}};
  EXPECT_THAT(bad.Validate().message(), HasSubstr("logit_bias"));
}

}  // namespace
}  // namespace kvmesh
