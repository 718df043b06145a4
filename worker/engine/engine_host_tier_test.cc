// The engine with a host-RAM KV tier, on a real model (stories260K): a
// prefix pushed out of the device pool comes back from host RAM instead of
// being recomputed, with the same output, and the KV events say where each
// block is.
#include <gtest/gtest.h>

#include <future>

#include "common/tokenizer/tokenizer.h"
#include "worker/engine/engine.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kModel = std::string(KVMESH_SHARED_DIR) + "/models/stories260K.gguf";

struct Result {
  std::vector<int32_t> tokens;
  RequestOutput final_output;
};

class EngineHostTierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto model = Model::Load(kModel);
    ASSERT_TRUE(model.ok()) << model.status().ToString() << " (needs ../shared/models)";
    model_ = std::move(model).value();
    auto tc = TokenizerConfigFromGguf(model_->file());
    ASSERT_TRUE(tc.ok());
    tokenizer_ = std::move(Tokenizer::Create(*tc)).value();
  }

  std::unique_ptr<Engine> MakeEngine(int64_t device_blocks, int64_t host_bytes) {
    const ModelConfig& c = model_->config();
    KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kBF16};
    layout_ = layout;
    auto options = PlanOptions::Parse("", "", "", 2);
    EXPECT_TRUE(options.ok());
    auto exec = ModelExecutor::Create(*model_, layout, *options, device_blocks);
    EXPECT_TRUE(exec.ok()) << exec.status().ToString();
    EngineConfig config;
    config.model_identity = model_->identity();
    config.kv_host_memory_bytes = host_bytes;
    auto engine = std::make_unique<Engine>(c, *tokenizer_, std::move(exec).value(), config);
    engine->Start();
    return engine;
  }

  std::vector<int32_t> Prompt(const std::string& sentence, int repeats) const {
    std::string text;
    for (int i = 0; i < repeats; ++i) text += sentence;
    return tokenizer_->Encode(text, true, false);
  }

  Result Run(Engine& e, const std::string& id, const std::vector<int32_t>& prompt) {
    auto result = std::make_shared<Result>();
    auto done = std::make_shared<std::promise<void>>();
    EngineRequest r;
    r.id = id;
    r.prompt = prompt;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 12;
    r.on_output = [result, done](RequestOutput&& out) {
      result->tokens.insert(result->tokens.end(), out.tokens.begin(), out.tokens.end());
      if (out.finished) {
        result->final_output = out;
        done->set_value();
      }
    };
    const Status submitted = e.Submit(std::move(r));
    if (!submitted.ok()) {
      ADD_FAILURE() << id << ": " << submitted.ToString();
      return {};
    }
    done->get_future().wait();
    return *result;
  }

  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  KvLayout layout_;
};

TEST_F(EngineHostTierTest, EvictedPrefixComesBackFromHostRamWithTheSameOutput) {
  // 24 device blocks (384 tokens) hold one of the two ~300-token prompts.
  auto engine = MakeEngine(24, 4 << 20);
  const auto a = Prompt("Once upon a time, there was a little girl named Lily. ", 22);
  const auto b = Prompt("Tom had a big red ball and a small blue car. ", 14);
  ASSERT_GT(a.size(), 250u);
  ASSERT_LT(a.size(), 360u);
  auto sub = engine->kv_events().Subscribe();
  const Result cold = Run(*engine, "a-cold", a);
  EXPECT_EQ(cold.final_output.cached_tokens, 0);
  Run(*engine, "b", b);  // pushes a's blocks to the host tier
  const EngineLoad after_b = engine->GetLoad();
  EXPECT_GT(after_b.tiers.spilled_blocks, 0);
  EXPECT_GT(after_b.host_blocks, 0);
  EXPECT_GT(after_b.host_restore_tokens_per_s, 0);

  const Result warm = Run(*engine, "a-warm", a);
  EXPECT_GE(warm.final_output.cached_tokens, static_cast<int32_t>(0.9 * a.size()));
  EXPECT_EQ(warm.tokens, cold.tokens);
  const EngineLoad load = engine->GetLoad();
  // Its cached tokens are the device blocks that survived plus those restored.
  EXPECT_GT(load.tiers.host_hit_blocks, 0);
  EXPECT_EQ((load.tiers.device_hit_blocks + load.tiers.host_hit_blocks) * 16,
            warm.final_output.cached_tokens);
  EXPECT_EQ(load.tiers.restored_bytes,
            load.tiers.host_hit_blocks * static_cast<int64_t>(layout_.bytes_per_block()));

  // The events told a subscriber about both tiers.
  bool host_stored = false, host_removed = false;
  KvEventBatch batch;
  while (sub->Next(&batch, std::chrono::milliseconds(50))) {
    for (const KvEvent& e : batch.events) {
      if (e.tier != CacheTier::kHost) continue;
      host_stored |= e.kind == KvEvent::Kind::kStored;
      host_removed |= e.kind == KvEvent::Kind::kRemoved;  // restored: left the host
    }
  }
  EXPECT_TRUE(host_stored);
  EXPECT_TRUE(host_removed);
  // A new subscriber's snapshot lists the host tier's blocks under their tier.
  auto late = engine->kv_events().Subscribe();
  ASSERT_TRUE(late->Next(&batch, std::chrono::milliseconds(1000)));
  ASSERT_TRUE(batch.snapshot);
  size_t host_hashes = 0;
  for (const KvEvent& e : batch.events) {
    if (e.tier == CacheTier::kHost) host_hashes += e.hashes.size();
  }
  EXPECT_EQ(host_hashes, static_cast<size_t>(engine->GetLoad().host_blocks));
}

TEST_F(EngineHostTierTest, WithoutAHostTierTheEvictedPrefixIsRecomputed) {
  auto engine = MakeEngine(24, 0);
  const auto a = Prompt("Once upon a time, there was a little girl named Lily. ", 22);
  const auto b = Prompt("Tom had a big red ball and a small blue car. ", 14);
  const Result cold = Run(*engine, "a-cold", a);
  Run(*engine, "b", b);
  const Result again = Run(*engine, "a-again", a);
  EXPECT_LT(again.final_output.cached_tokens, static_cast<int32_t>(0.5 * a.size()));
  EXPECT_EQ(again.tokens, cold.tokens);
  EXPECT_EQ(engine->GetLoad().host_blocks_capacity, 0);
}

}  // namespace
}  // namespace kvmesh
