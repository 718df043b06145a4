// The engine on a real model (stories260K): batching, prefix caching,
// cancellation, preemption, admission errors and KV events.
#include "worker/engine/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <nlohmann/json.hpp>

#include "common/grammar/json_schema.h"
#include "common/tokenizer/tokenizer.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

const std::string kModel = std::string(KVMESH_SHARED_DIR) + "/models/stories260K.gguf";

struct Collected {
  std::mutex mu;
  std::vector<int32_t> tokens;
  std::string text;
  RequestOutput final_output;
  std::promise<void> done;
  bool finished = false;
};

class EngineTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = Model::Load(kModel);
    ASSERT_TRUE(model.ok()) << model.status().ToString() << " (needs ../shared/models)";
    model_ = std::move(model).value();
    auto tc = TokenizerConfigFromGguf(model_->file());
    ASSERT_TRUE(tc.ok());
    tokenizer_ = std::move(Tokenizer::Create(*tc)).value();
  }

  // `devices` and `split` as on the command line; empty: one device of 2 threads.
  std::unique_ptr<Engine> MakeEngine(int64_t blocks, SchedulerLimits limits = {},
                                     const std::string& devices = "",
                                     const std::string& split = "") {
    const ModelConfig& c = model_->config();
    KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
    auto options = PlanOptions::Parse(devices, split, "", devices.empty() ? 2 : 1);
    EXPECT_TRUE(options.ok());
    auto exec = ModelExecutor::Create(*model_, layout, *options, blocks);
    EXPECT_TRUE(exec.ok()) << exec.status().ToString();
    EngineConfig config;
    config.limits = limits;
    config.model_identity = model_->identity();
    auto engine = std::make_unique<Engine>(c, *tokenizer_, std::move(exec).value(), config);
    engine->Start();
    return engine;
  }

  EngineRequest Greedy(const std::string& id, const std::string& prompt, int max_tokens,
                       std::shared_ptr<Collected> sink) {
    EngineRequest r;
    r.id = id;
    r.prompt = tokenizer_->Encode(prompt, true, false);
    r.sampling.temperature = 0;
    r.sampling.max_tokens = max_tokens;
    r.on_output = [sink](RequestOutput&& out) {
      std::lock_guard<std::mutex> lock(sink->mu);
      sink->tokens.insert(sink->tokens.end(), out.tokens.begin(), out.tokens.end());
      sink->text += out.text;
      if (out.finished) {
        sink->final_output = out;
        sink->finished = true;
        sink->done.set_value();
      }
    };
    return r;
  }

  std::shared_ptr<Collected> RunOne(Engine& e, const std::string& id, const std::string& prompt,
                                    int n) {
    auto sink = std::make_shared<Collected>();
    EXPECT_TRUE(e.Submit(Greedy(id, prompt, n, sink)).ok());
    sink->done.get_future().wait();
    return sink;
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
};

const std::vector<std::string> kPrompts = {"Once upon a time",
                                           "Lily and Ben",
                                           "The cat sat on the",
                                           "One day, a little girl named",
                                           "Tom had a big red ball. He",
                                           "The sun was shining",
                                           "A little bird",
                                           "Max the dog",
                                           "In the park, there was",
                                           "Sue liked to",
                                           "The big tree",
                                           "Mom said",
                                           "Tim and his friend",
                                           "It was a rainy day",
                                           "The little boat",
                                           "Anna found a"};

TEST_F(EngineTest, SixteenConcurrentRequestsEqualSequentialOnes) {
  auto engine = MakeEngine(256);
  std::map<std::string, std::vector<int32_t>> alone;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    alone[kPrompts[i]] = RunOne(*engine, "s" + std::to_string(i), kPrompts[i], 40)->tokens;
  }
  engine->ClearCache();  // no prefix hits: a true cold batch
  std::vector<std::shared_ptr<Collected>> sinks;
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    sinks.push_back(std::make_shared<Collected>());
    ASSERT_TRUE(engine->Submit(Greedy("c" + std::to_string(i), kPrompts[i], 40, sinks[i])).ok());
  }
  for (size_t i = 0; i < kPrompts.size(); ++i) {
    sinks[i]->done.get_future().wait();
    EXPECT_EQ(sinks[i]->tokens, alone[kPrompts[i]]) << kPrompts[i];
    EXPECT_EQ(sinks[i]->final_output.finish_reason, FinishReason::kLength);
  }
  EXPECT_GT(engine->GetLoad().steps, 0);
}

TEST_F(EngineTest, PrefixHitReusesBlocksAndKeepsTheOutput) {
  auto engine = MakeEngine(128);
  std::string prefix;
  for (int i = 0; i < 12; ++i) prefix += "Once upon a time, there was a little girl named Lily. ";
  auto cold = RunOne(*engine, "cold", prefix + "She", 24);
  EXPECT_EQ(cold->final_output.cached_tokens, 0);
  auto warm = RunOne(*engine, "warm", prefix + "She", 24);
  const int32_t n_prompt = warm->final_output.prompt_tokens;
  EXPECT_GT(warm->final_output.cached_tokens, n_prompt - 17);  // all full blocks but the last
  EXPECT_EQ(warm->final_output.cached_tokens % 16, 0);
  EXPECT_EQ(warm->tokens, cold->tokens);
  // A different salt never shares.
  auto other = Greedy("salted", prefix + "She", 24, std::make_shared<Collected>());
  auto sink = std::make_shared<Collected>();
  other = Greedy("salted", prefix + "She", 24, sink);
  other.cache_salt = "tenant-b";
  ASSERT_TRUE(engine->Submit(std::move(other)).ok());
  sink->done.get_future().wait();
  EXPECT_EQ(sink->final_output.cached_tokens, 0);
  EXPECT_EQ(sink->tokens, cold->tokens);
}

TEST_F(EngineTest, CancelFreesBlocksAndSparesOthers) {
  auto engine = MakeEngine(64);
  auto reference = RunOne(*engine, "ref", "Lily and Ben", 60);
  engine->ClearCache();
  auto victim = std::make_shared<Collected>();
  auto other = std::make_shared<Collected>();
  ASSERT_TRUE(engine->Submit(Greedy("victim", "Once upon a time", 1000, victim)).ok());
  ASSERT_TRUE(engine->Submit(Greedy("other", "Lily and Ben", 60, other)).ok());
  for (;;) {
    std::lock_guard<std::mutex> lock(victim->mu);
    if (victim->tokens.size() >= 5) break;
  }
  engine->Cancel("victim");
  victim->done.get_future().wait();
  EXPECT_EQ(victim->final_output.finish_reason, FinishReason::kCancelled);
  other->done.get_future().wait();
  EXPECT_EQ(other->tokens, reference->tokens);
  ASSERT_TRUE(engine->WaitIdle(std::chrono::seconds(5)));
  const EngineLoad load = engine->GetLoad();
  EXPECT_EQ(load.blocks_used, 0);
  EXPECT_EQ(load.running, 0);
}

TEST_F(EngineTest, PreemptionUnderATinyCacheKeepsOutputsExact) {
  auto big = MakeEngine(256);
  std::vector<std::vector<int32_t>> alone;
  for (int i = 0; i < 6; ++i)
    alone.push_back(RunOne(*big, "a" + std::to_string(i), kPrompts[i], 60)->tokens);
  // 12 blocks of 16 = 192 positions for 6 requests of ~66 tokens: must preempt.
  auto small = MakeEngine(12);
  std::vector<std::shared_ptr<Collected>> sinks;
  for (int i = 0; i < 6; ++i) {
    sinks.push_back(std::make_shared<Collected>());
    ASSERT_TRUE(small->Submit(Greedy("p" + std::to_string(i), kPrompts[i], 60, sinks[i])).ok());
  }
  for (int i = 0; i < 6; ++i) {
    sinks[i]->done.get_future().wait();
    EXPECT_EQ(sinks[i]->tokens, alone[i]) << i;
  }
  EXPECT_GT(small->GetLoad().preemptions, 0);
}

// Split devices behind the engine: prefix hits (requests sharing a long
// prefix) and preemption (a cache too small for all of them) keep every
// output exact. A layer split computes the same bits as one device; a tensor
// split sums its partial products in another order, so it is held to its own
// unpreempted run.
TEST_F(EngineTest, SplitDevicesKeepOutputsExactUnderPrefixHitsAndPreemption) {
  std::string prefix;
  for (int i = 0; i < 4; ++i) prefix += "Once upon a time, there was a little girl named Lily. ";
  std::vector<std::string> prompts;
  for (int i = 0; i < 6; ++i) prompts.push_back(prefix + kPrompts[i]);
  int64_t cached = 0;
  auto run_all = [&](Engine& engine, const std::string& tag) {
    std::vector<std::shared_ptr<Collected>> sinks;
    for (size_t i = 0; i < prompts.size(); ++i) {
      sinks.push_back(std::make_shared<Collected>());
      EXPECT_TRUE(engine.Submit(Greedy(tag + std::to_string(i), prompts[i], 40, sinks[i])).ok());
    }
    std::vector<std::vector<int32_t>> tokens;
    for (auto& sink : sinks) {
      sink->done.get_future().wait();
      tokens.push_back(sink->tokens);
      cached += sink->final_output.cached_tokens;
    }
    return tokens;
  };
  std::vector<std::vector<int32_t>> alone;
  {
    auto big = MakeEngine(256);
    for (size_t i = 0; i < prompts.size(); ++i) {
      alone.push_back(RunOne(*big, "a" + std::to_string(i), prompts[i], 40)->tokens);
    }
  }
  struct Case {
    std::string devices, split;
  };
  for (const Case& c : {Case{"cpu:0,cpu:1", "layer"}, Case{"cpu:0,cpu:1,cpu:2", "layer"},
                        Case{"cpu:0,cpu:1", "tensor"}}) {
    SCOPED_TRACE(c.devices + " " + c.split);
    std::vector<std::vector<int32_t>> reference = alone;
    if (c.split == "tensor") {
      auto big = MakeEngine(256, {}, c.devices, c.split);
      reference.clear();
      for (size_t i = 0; i < prompts.size(); ++i) {
        reference.push_back(RunOne(*big, "t" + std::to_string(i), prompts[i], 40)->tokens);
      }
    }
    // 20 blocks of 16 = 320 positions for 6 requests of ~100 tokens that
    // share a 64-token prefix: hits, and preemptions once they grow.
    auto small = MakeEngine(20, {}, c.devices, c.split);
    RunOne(*small, "warm", prefix + "The", 1);
    cached = 0;
    const auto tokens = run_all(*small, "p");
    EXPECT_GE(cached, 64);  // the warm request's prefix blocks were hit
    for (size_t i = 0; i < prompts.size(); ++i) EXPECT_EQ(tokens[i], reference[i]) << i;
    const EngineLoad load = small->GetLoad();
    EXPECT_GT(load.preemptions, 0);
  }
}

// A prompt of 100 tokens prefilled 32 per step reports the tokens computed
// after each chunk but the last (which samples), and nothing once decoding.
TEST_F(EngineTest, ReportsPrefillProgressPerChunk) {
  auto engine = MakeEngine(64, {.max_tokens_per_step = 32, .max_running = 4, .max_waiting = 4});
  auto sink = std::make_shared<Collected>();
  EngineRequest r = Greedy("p", "", 3, sink);
  r.prompt.assign(100, 450);  // " The" a hundred times
  r.report_prefill_progress = true;
  auto progress = std::make_shared<std::vector<int32_t>>();
  auto inner = r.on_output;
  r.on_output = [progress, inner](RequestOutput&& out) {
    if (out.tokens.empty() && !out.finished) progress->push_back(out.prompt_tokens_computed);
    inner(std::move(out));
  };
  ASSERT_TRUE(engine->Submit(std::move(r)).ok());
  sink->done.get_future().wait();
  EXPECT_EQ(*progress, (std::vector<int32_t>{32, 64, 96}));
  EXPECT_EQ(sink->tokens.size(), 3u);
}

// A grammar-constrained request writes only what its grammar matches, ends
// where the grammar is complete, and batches with unconstrained requests
// without changing their output.
TEST_F(EngineTest, ConstrainedOutputMatchesItsGrammarAndSparesOthers) {
  auto engine = MakeEngine(256);
  GrammarConstraints constraints(*tokenizer_);
  auto gbnf = grammar::JsonSchemaToGbnf(nlohmann::json::parse(R"({"type": "object",
      "properties": {"n": {"type": "integer", "minimum": 0, "maximum": 9},
                     "ok": {"type": "boolean"}}, "required": ["n", "ok"]})"));
  ASSERT_TRUE(gbnf.ok()) << gbnf.status().ToString();
  auto constraint = constraints.Get(*gbnf, {});
  ASSERT_TRUE(constraint.ok()) << constraint.status().ToString();
  const auto alone = RunOne(*engine, "alone", "Once upon a time", 24);
  for (int seed = 1; seed <= 6; ++seed) {
    auto sink = std::make_shared<Collected>();
    EngineRequest r = Greedy("c" + std::to_string(seed), "Once upon a time", 64, sink);
    r.sampling.temperature = 1.0f;
    r.sampling.seed = seed;
    r.constraint = *constraint;
    auto other = std::make_shared<Collected>();
    ASSERT_TRUE(engine->Submit(std::move(r)).ok());
    ASSERT_TRUE(
        engine->Submit(Greedy("u" + std::to_string(seed), "Once upon a time", 24, other)).ok());
    sink->done.get_future().wait();
    other->done.get_future().wait();
    EXPECT_TRUE(grammar::GrammarMatcher::Matches(*constraint->grammar, sink->text)) << sink->text;
    EXPECT_EQ(sink->final_output.finish_reason, FinishReason::kStop) << sink->text;
    const auto parsed = nlohmann::json::parse(sink->text);
    EXPECT_TRUE(parsed["n"].is_number_integer() && parsed["ok"].is_boolean()) << sink->text;
    EXPECT_EQ(other->tokens, alone->tokens);  // batched beside it, unchanged
  }
  EXPECT_GT(constraint->masks->hits(), 0u);
}

TEST_F(EngineTest, BadRequestsAreRejectedClearly) {
  auto engine = MakeEngine(8, {.max_tokens_per_step = 512, .max_running = 4, .max_waiting = 2});
  auto sink = std::make_shared<Collected>();
  EngineRequest empty = Greedy("e", "", 4, sink);
  empty.prompt.clear();
  EXPECT_THAT(engine->Submit(std::move(empty)).message(), HasSubstr("prompt is empty"));
  EngineRequest bad_token = Greedy("t", "hi", 4, sink);
  bad_token.prompt.push_back(100000);
  Status s = engine->Submit(std::move(bad_token));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("token 100000 at index"));
  EngineRequest long_prompt = Greedy("l", "hi", 4, sink);
  long_prompt.prompt.assign(5000, 300);
  EXPECT_THAT(engine->Submit(std::move(long_prompt)).message(), HasSubstr("context"));
  EngineRequest neg = Greedy("n", "hi", 4, sink);
  neg.sampling.max_tokens = -1;
  EXPECT_THAT(engine->Submit(std::move(neg)).message(), HasSubstr("max_tokens"));
  EngineRequest temp = Greedy("temp", "hi", 4, sink);
  temp.sampling.temperature = -2;
  EXPECT_THAT(engine->Submit(std::move(temp)).message(), HasSubstr("temperature"));
  // The engine still serves.
  auto ok = RunOne(*engine, "fine", "Once upon a time", 8);
  EXPECT_EQ(ok->tokens.size(), 8u);
}

TEST_F(EngineTest, KvEventsSnapshotThenDeltas) {
  auto engine = MakeEngine(64);
  std::string prompt;
  for (int i = 0; i < 6; ++i) prompt += "Once upon a time, there was a girl. ";
  auto first = RunOne(*engine, "one", prompt, 4);
  auto sub = engine->kv_events().Subscribe();
  KvEventBatch snap;
  ASSERT_TRUE(sub->Next(&snap, std::chrono::seconds(1)));
  EXPECT_TRUE(snap.snapshot);
  EXPECT_EQ(snap.epoch, engine->epoch());
  const auto ids = tokenizer_->Encode(prompt, true, false);
  const auto want = HashFullBlocks(engine->hash_root(), ids, 16);
  ASSERT_EQ(snap.events.size(), 1u);
  for (const BlockHash& h : want) {
    EXPECT_NE(std::find(snap.events[0].hashes.begin(), snap.events[0].hashes.end(), h),
              snap.events[0].hashes.end());
  }
  engine->ClearCache();
  KvEventBatch next;
  ASSERT_TRUE(sub->Next(&next, std::chrono::seconds(1)));
  EXPECT_FALSE(next.snapshot);
  EXPECT_EQ(next.sequence, snap.sequence + 1);
  ASSERT_EQ(next.events.size(), 1u);
  EXPECT_EQ(next.events[0].kind, KvEvent::Kind::kAllCleared);
}

}  // namespace
}  // namespace kvmesh
