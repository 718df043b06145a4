// Perplexity in llama-perplexity's convention: chunking, the statistics with
// hand-computed values, and whole runs on the shipped models against the
// numbers llama.cpp printed for them (../shared/models/README.md).
#include "worker/eval/perplexity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <numeric>
#include <sstream>

#include "common/tokenizer/tokenizer.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kModels = std::string(KVMESH_SHARED_DIR) + "/models/";

TEST(PerplexityPlanTest, ChunksOfTheText) {
  auto plan = PlanPerplexity(9589, 256);
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->n_chunk, 37);
  EXPECT_EQ(plan->first, 128);
  EXPECT_EQ(plan->scored_per_chunk(), 127);
  EXPECT_EQ(PlanPerplexity(511, 256).status().message(),
            "the text tokenizes to 511 tokens; perplexity with a context of 256 needs at least "
            "512 (use a longer text or a smaller -c)");
  EXPECT_EQ(PlanPerplexity(100, 3).status().message(),
            "context 3 is too small for perplexity; use -c 4 or more");
}

TEST(PerplexityPlanTest, EachChunkStartsWithBos) {
  std::vector<int32_t> tokens(1000);
  std::iota(tokens.begin(), tokens.end(), 0);
  const PerplexityPlan plan = *PlanPerplexity(1000, 256);
  EXPECT_EQ(plan.n_chunk, 3);
  const std::vector<int32_t> chunk = ChunkTokens(tokens, plan, 2, 1);
  ASSERT_EQ(chunk.size(), 256u);
  EXPECT_EQ(chunk[0], 1);
  EXPECT_EQ(chunk[1], 513);
  EXPECT_EQ(chunk[255], 767);
  EXPECT_EQ(ChunkTokens(tokens, plan, 2, -1)[0], 512);
}

TEST(PerplexityStatsTest, LogSoftmax) {
  const float logits[2] = {0.0f, std::log(3.0f)};
  float lp[2];
  LogSoftmax(logits, 2, lp);
  EXPECT_FLOAT_EQ(lp[0], std::log(0.25f));
  EXPECT_FLOAT_EQ(lp[1], std::log(0.75f));
}

TEST(PerplexityStatsTest, NllMeanAndError) {
  NllStats s;
  for (double v : {1.0, 2.0, 3.0}) s.Add(v);
  EXPECT_EQ(s.count(), 3);
  EXPECT_DOUBLE_EQ(s.MeanNll(), 2.0);
  EXPECT_DOUBLE_EQ(s.Ppl(), std::exp(2.0));
  // Population variance 2/3; standard error sqrt(2/3 / 2).
  EXPECT_NEAR(s.PplError(), std::exp(2.0) * std::sqrt(1.0 / 3.0), 1e-12);
}

TEST(PerplexityStatsTest, KlAndSameTop) {
  KlStats s;
  const float base[2] = {std::log(0.5f), std::log(0.5f)};
  const float same[2] = {std::log(0.5f), std::log(0.5f)};
  const float moved[2] = {std::log(0.25f), std::log(0.75f)};
  s.Add(base, same, 2);
  s.Add(base, moved, 2);  // 0.5 ln 2 + 0.5 ln(2/3) = 0.5 ln(4/3); top 0 vs 1
  EXPECT_EQ(s.count(), 2);
  EXPECT_NEAR(s.MeanKl(), 0.25 * std::log(4.0 / 3.0), 1e-7);
  EXPECT_NEAR(s.MaxKl(), 0.5 * std::log(4.0 / 3.0), 1e-7);
  EXPECT_DOUBLE_EQ(s.SameTop(), 0.5);
  EXPECT_NEAR(s.KlQuantile(0.5), 0.25 * std::log(4.0 / 3.0), 1e-7);
}

TEST(PerplexityStatsTest, ScoreChunkUsesTheNextToken) {
  // n_ctx 4: first 2, one scored row (position 2 predicting position 3).
  const PerplexityPlan plan{4, 1, 2};
  const std::vector<int32_t> chunk = {1, 0, 0, 1};
  const std::vector<float> logits = {0.0f, std::log(3.0f)};  // p(token 1) = 3/4
  NllStats nll;
  KlStats kl;
  std::vector<float> lp;
  ScoreChunk(logits, chunk, plan, 2, nullptr, &nll, &kl, &lp);
  EXPECT_EQ(nll.count(), 1);
  EXPECT_NEAR(nll.MeanNll(), -std::log(0.75), 1e-7);
  EXPECT_EQ(kl.count(), 0);
  ASSERT_EQ(lp.size(), 2u);
}

struct Loaded {
  std::unique_ptr<Model> model;
  std::unique_ptr<Tokenizer> tokenizer;
  std::vector<int32_t> tokens;
};

Loaded LoadWithText(const std::string& file) {
  Loaded l;
  auto model = Model::Load(kModels + file);
  if (!model.ok()) {
    ADD_FAILURE() << model.status().ToString();
    return l;
  }
  l.model = std::move(*model);
  auto config = TokenizerConfigFromGguf(l.model->file());
  EXPECT_TRUE(config.ok());
  l.tokenizer = std::move(*Tokenizer::Create(std::move(*config)));
  std::ifstream in(kModels + "tinystories-eval.txt", std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  l.tokens = l.tokenizer->Encode(text.str(), true, false);
  return l;
}

double Perplexity(const Loaded& l, TensorType kv_type, int ctx) {
  const ModelConfig& c = l.model->config();
  KvLayout layout;
  layout.n_layer = c.n_layer;
  layout.n_head_kv = c.n_head_kv;
  layout.head_dim = c.head_dim;
  layout.k_type = kv_type;
  layout.v_type = kv_type;
  auto exec = ModelExecutor::CreateOnCpu(*l.model, layout, (ctx + 15) / 16, 2);
  EXPECT_TRUE(exec.ok()) << exec.status().ToString();
  const PerplexityPlan plan = *PlanPerplexity(static_cast<int64_t>(l.tokens.size()), ctx);
  NllStats nll;
  KlStats kl;
  std::vector<float> logits, lp;
  for (int i = 0; i < plan.n_chunk; ++i) {
    const std::vector<int32_t> chunk = ChunkTokens(l.tokens, plan, i, l.tokenizer->bos_id());
    EXPECT_TRUE(ChunkLogits(**exec, chunk, plan, &logits).ok());
    ScoreChunk(logits, chunk, plan, c.n_vocab, nullptr, &nll, &kl, &lp);
  }
  EXPECT_EQ(nll.count(), plan.n_chunk * plan.scored_per_chunk());
  return nll.Ppl();
}

// llama-perplexity -c 256 on tinystories-eval.txt: 2.6810 (stories260K) and
// 2.8665 (tinystories-d64), both with an f16 cache.
TEST(PerplexityModelTest, MatchesLlamaCppOnStories260K) {
  const Loaded l = LoadWithText("stories260K.gguf");
  ASSERT_NE(l.model, nullptr);
  ASSERT_EQ(l.tokens.size(), 9589u);
  EXPECT_NEAR(Perplexity(l, TensorType::kF16, 256), 2.6810, 0.0005);
}

TEST(PerplexityModelTest, MatchesLlamaCppOnTinyStoriesD64) {
  const Loaded l = LoadWithText("tinystories-d64.gguf");
  ASSERT_NE(l.model, nullptr);
  EXPECT_NEAR(Perplexity(l, TensorType::kF16, 256), 2.8665, 0.0005);
}

}  // namespace
}  // namespace kvmesh
