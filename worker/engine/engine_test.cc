// The engine on a real model (stories260K): batching, prefix caching,
// cancellation, preemption, admission errors and KV events.
#include "worker/engine/engine.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

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

  // Submits every request before the engine gets past the first one's first
  // output, so all of them compete for the cache at once however this thread
  // is scheduled: on a loaded machine a stalled submitter lets the early
  // requests finish before the late ones arrive, and a cache sized to force
  // preemption then never fills.
  void SubmitTogether(Engine& e, std::vector<EngineRequest> requests) {
    auto gate = std::make_shared<std::promise<void>>();
    std::shared_future<void> open = gate->get_future().share();
    auto inner = std::move(requests.front().on_output);
    requests.front().on_output = [open, inner](RequestOutput&& out) {
      open.wait();
      inner(std::move(out));
    };
    for (EngineRequest& r : requests) EXPECT_TRUE(e.Submit(std::move(r)).ok());
    gate->set_value();
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

// The load counts what is left to compute: a waiting request's cached prefix
// is not (cache-first admission will reuse it), a waiting miss counts in
// full; the step budget is reported with it.
TEST_F(EngineTest, QueuedPrefillLeavesOutWhatIsCached) {
  SchedulerLimits limits;
  limits.max_running = 1;
  auto engine = MakeEngine(128, limits);
  std::string context, other;
  for (int i = 0; i < 12; ++i) context += "Once upon a time, there was a little girl named Lily. ";
  for (int i = 0; i < 12; ++i) other += "The big dog ran to the park with a red ball and a hat. ";
  RunOne(*engine, "context", context + "She", 4);
  // One slow request holds the only running slot while two more wait.
  engine->SetStepDelay(std::chrono::milliseconds(20));
  auto blocker = std::make_shared<Collected>();
  ASSERT_TRUE(engine->Submit(Greedy("blocker", "Lily and Ben", 400, blocker)).ok());
  for (;;) {
    std::lock_guard<std::mutex> lock(blocker->mu);
    if (!blocker->tokens.empty()) break;
  }
  auto warm_sink = std::make_shared<Collected>(), cold_sink = std::make_shared<Collected>();
  EngineRequest warm = Greedy("warm", context + "He", 4, warm_sink);
  EngineRequest cold = Greedy("cold", other, 4, cold_sink);
  const int32_t n_warm = static_cast<int32_t>(warm.prompt.size());
  const int32_t n_cold = static_cast<int32_t>(cold.prompt.size());
  const int64_t steps_before = engine->GetLoad().steps;
  ASSERT_TRUE(engine->Submit(std::move(warm)).ok());
  ASSERT_TRUE(engine->Submit(std::move(cold)).ok());
  // Two steps later both have left the inbox for the scheduler's queue.
  EngineLoad load;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  do {
    load = engine->GetLoad();
  } while (load.steps < steps_before + 2 && std::chrono::steady_clock::now() < until);
  ASSERT_GE(load.steps, steps_before + 2);
  ASSERT_EQ(load.waiting, 2);
  EXPECT_EQ(load.max_tokens_per_step, 512);
  // The cold prompt in full, and of the warm one only what follows the
  // context's full blocks (under two blocks).
  EXPECT_GE(load.queued_prefill_tokens, n_cold);
  EXPECT_LT(load.queued_prefill_tokens, n_cold + 32);
  EXPECT_GT(n_warm, 160);
  engine->SetStepDelay(std::chrono::milliseconds(0));
  engine->Cancel("blocker");
  warm_sink->done.get_future().wait();
  cold_sink->done.get_future().wait();
  EXPECT_GT(warm_sink->final_output.cached_tokens, n_warm - 32);
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
  std::vector<EngineRequest> requests;
  for (int i = 0; i < 6; ++i) {
    sinks.push_back(std::make_shared<Collected>());
    requests.push_back(Greedy("p" + std::to_string(i), kPrompts[i], 60, sinks[i]));
  }
  SubmitTogether(*small, std::move(requests));
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
    std::vector<EngineRequest> requests;
    for (size_t i = 0; i < prompts.size(); ++i) {
      sinks.push_back(std::make_shared<Collected>());
      requests.push_back(Greedy(tag + std::to_string(i), prompts[i], 40, sinks[i]));
    }
    SubmitTogether(engine, std::move(requests));
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

// Every output of a request with several choices (or logprobs).
struct Outputs {
  std::mutex mu;
  std::vector<RequestOutput> all;
  std::promise<void> done;
  int last_of_request = 0;
};

OutputCallback Collect(std::shared_ptr<Outputs> sink) {
  return [sink](RequestOutput&& out) {
    std::lock_guard<std::mutex> lock(sink->mu);
    const bool last = out.last_of_request;
    sink->all.push_back(std::move(out));
    if (last && sink->last_of_request++ == 0) sink->done.set_value();
  };
}

class PrefillCounter : public EngineObserver {
 public:
  void OnStep(int32_t prefill_tokens, int32_t, double) override { prefill += prefill_tokens; }
  std::atomic<int64_t> prefill{0};
};

TEST_F(EngineTest, PromptLogprobsScoreEveryTokenAndIgnoreTheCache) {
  auto engine = MakeEngine(64);
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She liked to";
  const std::vector<int32_t> ids = tokenizer_->Encode(prompt, true, false);
  std::vector<std::vector<TokenLogprob>> runs;
  for (int run = 0; run < 2; ++run) {
    auto sink = std::make_shared<Outputs>();
    EngineRequest r;
    r.id = "score" + std::to_string(run);
    r.prompt = ids;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 0;
    r.prompt_logprobs = true;
    r.top_logprobs = 3;
    r.on_output = Collect(sink);
    ASSERT_TRUE(engine->Submit(std::move(r)).ok());
    sink->done.get_future().wait();
    ASSERT_EQ(sink->all.size(), 1u);
    const RequestOutput& out = sink->all[0];
    EXPECT_EQ(out.cached_tokens, 0) << "scoring must compute every position";
    ASSERT_EQ(out.prompt_logprobs.size(), ids.size() - 1);
    for (size_t i = 0; i < out.prompt_logprobs.size(); ++i) {
      const TokenLogprob& lp = out.prompt_logprobs[i];
      EXPECT_EQ(lp.token, ids[i + 1]);
      EXPECT_LE(lp.logprob, 0.0f);
      ASSERT_EQ(lp.top.size(), 3u);
      EXPECT_GE(lp.top[0].second, lp.logprob);
      EXPECT_GE(lp.top[0].second, lp.top[1].second);
    }
    runs.push_back(out.prompt_logprobs);
  }
  for (size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_NEAR(runs[0][i].logprob, runs[1][i].logprob, 1e-4) << "token " << i + 1;
  }
}

TEST_F(EngineTest, GreedyTokensAreTheirPositionsMostLikely) {
  auto engine = MakeEngine(64);
  auto sink = std::make_shared<Outputs>();
  EngineRequest r;
  r.id = "lp";
  r.prompt = tokenizer_->Encode("Lily and Ben", true, false);
  r.sampling.temperature = 0;
  r.sampling.max_tokens = 12;
  r.logprobs = true;
  r.top_logprobs = 5;
  r.on_output = Collect(sink);
  ASSERT_TRUE(engine->Submit(std::move(r)).ok());
  sink->done.get_future().wait();
  int scored = 0;
  for (const RequestOutput& out : sink->all) {
    ASSERT_EQ(out.logprobs.size(), out.tokens.size());
    for (size_t i = 0; i < out.tokens.size(); ++i) {
      EXPECT_EQ(out.logprobs[i].token, out.tokens[i]);
      ASSERT_EQ(out.logprobs[i].top.size(), 5u);
      EXPECT_EQ(out.logprobs[i].top[0].first, out.tokens[i]);
      EXPECT_FLOAT_EQ(out.logprobs[i].top[0].second, out.logprobs[i].logprob);
      ++scored;
    }
  }
  EXPECT_GT(scored, 0);
}

TEST_F(EngineTest, ChoicesForkFromOnePrefill) {
  const ModelConfig& c = model_->config();
  KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto options = PlanOptions::Parse("", "", "", 2);
  ASSERT_TRUE(options.ok());
  auto exec = ModelExecutor::Create(*model_, layout, *options, 64);
  ASSERT_TRUE(exec.ok());
  EngineConfig config;
  config.model_identity = model_->identity();
  PrefillCounter counter;
  Engine engine(c, *tokenizer_, std::move(exec).value(), config, &counter);
  engine.Start();

  const std::vector<int32_t> prompt =
      tokenizer_->Encode("Once upon a time, there was a big dog named Max.", true, false);
  ASSERT_NE(prompt.size() % 16, 0u) << "the test wants a partly filled last block to copy";
  auto sink = std::make_shared<Outputs>();
  EngineRequest r;
  r.id = "four";
  r.prompt = prompt;
  r.sampling.temperature = 1.0f;
  r.sampling.top_k = 0;
  r.sampling.top_p = 1.0f;
  r.sampling.min_p = 0.0f;
  r.sampling.seed = 7;
  r.sampling.max_tokens = 24;
  r.n = 4;
  r.on_output = Collect(sink);
  ASSERT_TRUE(engine.Submit(std::move(r)).ok());
  sink->done.get_future().wait();
  EXPECT_EQ(counter.prefill.load(), static_cast<int64_t>(prompt.size()))
      << "the prompt is computed once for all four choices";

  std::map<int32_t, std::vector<int32_t>> tokens;
  std::map<int32_t, RequestOutput> finals;
  for (RequestOutput& out : sink->all) {
    auto& t = tokens[out.choice];
    t.insert(t.end(), out.tokens.begin(), out.tokens.end());
    if (out.finished) finals[out.choice] = out;
  }
  ASSERT_EQ(finals.size(), 4u);
  EXPECT_EQ(sink->last_of_request, 1);
  EXPECT_TRUE(sink->all.back().last_of_request);
  for (const auto& [choice, out] : finals) {
    EXPECT_EQ(out.prompt_tokens, static_cast<int32_t>(prompt.size()));
    if (choice > 0) {
      EXPECT_EQ(out.cached_tokens, out.prompt_tokens) << "forked: all shared";
    }
  }
  // Seeds 7, 8, 9, 10: the choices differ.
  std::set<std::vector<int32_t>> distinct;
  for (const auto& [choice, t] : tokens) distinct.insert(t);
  EXPECT_GE(distinct.size(), 3u);

  // Each choice equals a single request with its seed: the forked pages
  // (and the copied last block) hold exactly the prompt's K and V.
  for (int choice = 0; choice < 4; ++choice) {
    auto one = std::make_shared<Outputs>();
    EngineRequest single;
    single.id = "single" + std::to_string(choice);
    single.prompt = prompt;
    single.sampling.temperature = 1.0f;
    single.sampling.top_k = 0;
    single.sampling.top_p = 1.0f;
    single.sampling.min_p = 0.0f;
    single.sampling.seed = 7 + choice;
    single.sampling.max_tokens = 24;
    single.on_output = Collect(one);
    ASSERT_TRUE(engine.Submit(std::move(single)).ok());
    one->done.get_future().wait();
    std::vector<int32_t> alone;
    for (const RequestOutput& out : one->all)
      alone.insert(alone.end(), out.tokens.begin(), out.tokens.end());
    EXPECT_EQ(alone, tokens[choice]) << "choice " << choice;
  }
  EXPECT_TRUE(engine.WaitIdle(std::chrono::seconds(5)));
}

TEST_F(EngineTest, CancellingARequestEndsEveryChoice) {
  auto engine = MakeEngine(64);
  auto sink = std::make_shared<Outputs>();
  EngineRequest r;
  r.id = "many";
  r.prompt = tokenizer_->Encode("Once upon a time", true, false);
  r.sampling.temperature = 1.0f;
  r.sampling.max_tokens = 100000;
  r.sampling.ignore_eos = true;
  r.n = 3;
  r.on_output = Collect(sink);
  ASSERT_TRUE(engine->Submit(std::move(r)).ok());
  for (;;) {  // until every choice has streamed
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::lock_guard<std::mutex> lock(sink->mu);
    std::set<int32_t> seen;
    for (const RequestOutput& out : sink->all) seen.insert(out.choice);
    if (seen.size() == 3) break;
  }
  engine->Cancel("many");
  ASSERT_EQ(sink->done.get_future().wait_for(std::chrono::seconds(10)), std::future_status::ready);
  int cancelled = 0;
  std::lock_guard<std::mutex> lock(sink->mu);
  for (const RequestOutput& out : sink->all) {
    if (out.finished) {
      EXPECT_EQ(out.finish_reason, FinishReason::kCancelled);
      ++cancelled;
    }
  }
  EXPECT_EQ(cancelled, 3);
  EXPECT_TRUE(engine->WaitIdle(std::chrono::seconds(5)));
}

}  // namespace
}  // namespace kvmesh
