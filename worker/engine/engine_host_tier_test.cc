// The engine with a host-RAM KV tier, on a real model (stories260K): a
// prefix pushed out of the device pool comes back from host RAM instead of
// being recomputed, with the same output, and the KV events say where each
// block is. And pages between two engines (peer prefix fetch): pages one
// exports, the other imports, with logits bit-identical to pages computed
// locally; forged and foreign-salt pages are refused.
#include <gtest/gtest.h>

#include <future>

#include "common/tokenizer/tokenizer.h"
#include "worker/engine/engine.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kModels = std::string(KVMESH_SHARED_DIR) + "/models/";

struct Result {
  std::vector<int32_t> tokens;
  std::vector<TokenLogprob> logprobs;
  RequestOutput final_output;
};

// Bit for bit: every sampled logprob and every top alternative.
void ExpectSameLogits(const Result& a, const Result& b) {
  ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
  for (size_t i = 0; i < a.logprobs.size(); ++i) {
    EXPECT_EQ(a.logprobs[i].token, b.logprobs[i].token) << "step " << i;
    EXPECT_EQ(a.logprobs[i].logprob, b.logprobs[i].logprob) << "step " << i;
    EXPECT_EQ(a.logprobs[i].top, b.logprobs[i].top) << "step " << i;
  }
}

class EngineHostTierTest : public ::testing::Test {
 protected:
  void SetUp() override { LoadModel("stories260K.gguf"); }

  void LoadModel(const std::string& file) {
    auto model = Model::Load(kModels + file);
    ASSERT_TRUE(model.ok()) << model.status().ToString() << " (needs ../shared/models)";
    model_ = std::move(model).value();
    auto tc = TokenizerConfigFromGguf(model_->file());
    ASSERT_TRUE(tc.ok());
    tokenizer_ = std::move(Tokenizer::Create(*tc)).value();
  }

  std::unique_ptr<Engine> MakeEngine(int64_t device_blocks, int64_t host_bytes,
                                     TensorType k_type = TensorType::kF16,
                                     TensorType v_type = TensorType::kBF16) {
    const ModelConfig& c = model_->config();
    KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, k_type, v_type};
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

  Result Run(Engine& e, const std::string& id, const std::vector<int32_t>& prompt,
             std::function<void(EngineRequest&)> adjust = nullptr) {
    auto result = std::make_shared<Result>();
    auto done = std::make_shared<std::promise<void>>();
    EngineRequest r;
    r.id = id;
    r.prompt = prompt;
    r.sampling.temperature = 0;
    r.sampling.max_tokens = 12;
    r.logprobs = true;
    r.top_logprobs = 5;
    if (adjust) adjust(r);
    r.on_output = [result, done](RequestOutput&& out) {
      result->tokens.insert(result->tokens.end(), out.tokens.begin(), out.tokens.end());
      result->logprobs.insert(result->logprobs.end(), out.logprobs.begin(), out.logprobs.end());
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

// Pages exported by one engine and imported by another give the same logits
// as the exporter's own cached pages, bit for bit, for f16 and q4_0 pages.
class EnginePeerPagesTest : public EngineHostTierTest,
                            public ::testing::WithParamInterface<TensorType> {
 protected:
  void SetUp() override { LoadModel("tinystories-d64.gguf"); }
};

TEST_P(EnginePeerPagesTest, FetchedPagesGiveTheLogitsOfLocallyComputedOnes) {
  const TensorType type = GetParam();
  auto holder = MakeEngine(64, 0, type, type);
  auto asker = MakeEngine(64, 0, type, type);
  ASSERT_EQ(holder->page_format(), asker->page_format());
  const auto prompt = Prompt("Once upon a time, there was a little girl named Lily. ", 14);
  ASSERT_GT(prompt.size(), 160u);
  const std::string salt = "tenant-a";
  auto salted = [&](EngineRequest& r) { r.cache_salt = salt; };
  Run(*holder, "cold", prompt, salted);
  const Result local = Run(*holder, "local", prompt, salted);  // from its own cached pages
  const int32_t full_blocks = static_cast<int32_t>((prompt.size() - 1) / 16);
  ASSERT_EQ(local.final_output.cached_tokens, full_blocks * 16);

  const auto hashes = HashFullBlocks(RootHash(model_->identity(), salt), prompt, 16);
  auto pages = holder->ExportPages(hashes, 64 << 20);
  ASSERT_TRUE(pages.ok()) << pages.status().ToString();
  ASSERT_EQ(pages->size(), hashes.size());
  EXPECT_EQ(holder->GetLoad().tiers.exported_blocks, static_cast<int64_t>(hashes.size()));

  const Result fetched = Run(*asker, "fetched", prompt, [&](EngineRequest& r) {
    r.cache_salt = salt;
    r.peer_pages = *pages;
  });
  EXPECT_EQ(fetched.final_output.cached_tokens, full_blocks * 16);
  EXPECT_EQ(asker->GetLoad().tiers.imported_blocks, static_cast<int64_t>(hashes.size()));
  EXPECT_EQ(fetched.tokens, local.tokens);
  ExpectSameLogits(fetched, local);

  // Half of the prefix on the asker already, the rest fetched from block 5.
  auto partial = MakeEngine(64, 0, type, type);
  const std::vector<int32_t> head(prompt.begin(), prompt.begin() + 5 * 16 + 3);
  Run(*partial, "head", head, salted);
  const Result rest = Run(*partial, "rest", prompt, [&](EngineRequest& r) {
    r.cache_salt = salt;
    r.peer_pages.assign(pages->begin() + 5, pages->end());
    r.peer_first_block = 5;
  });
  EXPECT_EQ(rest.final_output.cached_tokens, full_blocks * 16);
  ExpectSameLogits(rest, local);
}

INSTANTIATE_TEST_SUITE_P(KvTypes, EnginePeerPagesTest,
                         ::testing::Values(TensorType::kF16, TensorType::kQ4_0),
                         [](const auto& info) { return std::string(TensorTypeName(info.param)); });

TEST_F(EngineHostTierTest, ForgedAndForeignSaltPagesAreRecomputed) {
  auto holder = MakeEngine(64, 0);
  auto asker = MakeEngine(64, 0);
  const auto prompt = Prompt("Tom had a big red ball and a small blue car. ", 8);
  const auto salted = [](EngineRequest& r) { r.cache_salt = "a"; };
  const Result cold = Run(*holder, "cold", prompt, salted);
  const auto hashes = HashFullBlocks(RootHash(model_->identity(), "a"), prompt, 16);
  auto pages = holder->ExportPages(hashes, 64 << 20);
  ASSERT_TRUE(pages.ok());
  ASSERT_GE(pages->size(), 4u);

  // Block 3 claims the right hash over other tokens: blocks 0-2 are taken,
  // the rest computed, and the output is the same.
  auto forged = *pages;
  forged[3].tokens[0] = (forged[3].tokens[0] + 1) % model_->config().n_vocab;
  const Result got = Run(*asker, "forged", prompt, [&](EngineRequest& r) {
    r.cache_salt = "a";
    r.peer_pages = forged;
  });
  EXPECT_EQ(got.final_output.cached_tokens, 3 * 16);
  EXPECT_EQ(got.tokens, cold.tokens);

  // Another tenant's request is given tenant a's pages: none fit its hashes.
  auto other = MakeEngine(64, 0);
  const Result foreign = Run(*other, "foreign", prompt, [&](EngineRequest& r) {
    r.cache_salt = "b";
    r.peer_pages = *pages;
  });
  EXPECT_EQ(foreign.final_output.cached_tokens, 0);
  EXPECT_EQ(other->GetLoad().tiers.imported_blocks, 0);
  EXPECT_EQ(foreign.tokens, cold.tokens);
  // And the holder has nothing under tenant b's hashes.
  auto none =
      holder->ExportPages(HashFullBlocks(RootHash(model_->identity(), "b"), prompt, 16), 64 << 20);
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());
}

}  // namespace
}  // namespace kvmesh
