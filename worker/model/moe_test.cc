// Mixture-of-experts models (qwen3moe, qwen2moe, Mixtral): the router's choice of experts, the
// configuration's checks, and the forward pass. Agreement with llama.cpp on
// the synthetic qwen3-moe-tiny is measured by bench/synthetic_agreement.sh
// (docs/benchmarks.md); here:
//  - a mixture of one expert is the dense feed-forward of that expert: the
//    same file rewritten as a dense qwen3 gives bit-identical logits;
//  - a step's tokens grouped by expert give each token the logits it gets
//    alone (a prefill in one step against one token a step);
//  - a layer split gives the bits of one device; a tensor split, which cuts
//    every expert between the devices, agrees with one device to rounding.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "common/gguf/gguf_file.h"
#include "common/gguf/gguf_writer.h"
#include "common/thread_pool.h"
#include "worker/model/model.h"
#include "worker/model/moe_routing.h"
#include "worker/model/synthetic_model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kShared = KVMESH_SHARED_DIR;

TEST(RouteToExpertsTest, SoftmaxThenTheTopKInOrderOfProbability) {
  std::vector<float> logits = {0.0f, 2.0f, 1.0f, 2.0f};
  int32_t chosen[3];
  float weight[3];
  RouteToExperts(logits, 3, /*normalize=*/false, chosen, weight);
  EXPECT_EQ(chosen[0], 1);  // a tie goes to the lower expert
  EXPECT_EQ(chosen[1], 3);
  EXPECT_EQ(chosen[2], 2);
  const float z = 1.0f + 2.0f * std::exp(2.0f) + std::exp(1.0f);
  EXPECT_NEAR(weight[0], std::exp(2.0f) / z, 1e-6);
  EXPECT_NEAR(weight[2], std::exp(1.0f) / z, 1e-6);
  EXPECT_NEAR(std::accumulate(logits.begin(), logits.end(), 0.0f), 1.0f, 1e-6);

  std::vector<float> again = {0.0f, 2.0f, 1.0f, 2.0f};
  RouteToExperts(again, 2, /*normalize=*/true, chosen, weight);
  EXPECT_FLOAT_EQ(weight[0], 0.5f);
  EXPECT_FLOAT_EQ(weight[1], 0.5f);
}

// A qwen3moe header with everything but what `drop` names, plus `extra`.
std::string WriteMoeHeader(const std::string& name, const std::string& arch,
                           const std::vector<std::string>& drop,
                           const std::vector<std::pair<std::string, uint32_t>>& extra) {
  gguf::GgufWriter w;
  w.SetString("general.architecture", arch);
  const std::vector<std::pair<std::string, uint32_t>> keys = {
      {"block_count", 2},          {"embedding_length", 64},
      {"attention.head_count", 4}, {"vocab_size", 100},
      {"expert_count", 8},         {"expert_used_count", 2},
      {"feed_forward_length", 96}, {"expert_feed_forward_length", 32}};
  for (const auto& [key, value] : keys) {
    if (std::find(drop.begin(), drop.end(), key) == drop.end())
      w.SetUint32(arch + "." + key, value);
  }
  for (const auto& [key, value] : extra) w.SetUint32(arch + "." + key, value);
  const std::string path = ::testing::TempDir() + "/" + name + ".gguf";
  EXPECT_TRUE(w.WriteFile(path).ok());
  return path;
}

StatusOr<ModelConfig> ConfigOf(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> file, gguf::GgufFile::Open(path));
  return ModelConfig::FromGguf(*file);
}

TEST(MoeConfigTest, ReadsTheExpertsAndNamesWhatIsWrong) {
  auto good = ConfigOf(WriteMoeHeader("moe_good", "qwen3moe", {}, {}));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_EQ(good->arch, ModelArch::kQwen3Moe);
  EXPECT_EQ(good->n_expert, 8);
  EXPECT_EQ(good->n_expert_used, 2);
  EXPECT_EQ(good->n_ff_exp, 32);
  EXPECT_TRUE(good->norm_topk_prob);
  EXPECT_TRUE(good->has_qk_norm);

  // qwen2moe: a shared expert, weights not renormalised, Q/K/V biases.
  auto q2 = ConfigOf(
      WriteMoeHeader("moe_qwen2", "qwen2moe", {}, {{"expert_shared_feed_forward_length", 64}}));
  ASSERT_TRUE(q2.ok()) << q2.status().ToString();
  EXPECT_EQ(q2->arch, ModelArch::kQwen2Moe);
  EXPECT_EQ(q2->n_ff_shexp, 64);
  EXPECT_FALSE(q2->norm_topk_prob);
  EXPECT_TRUE(q2->has_qkv_bias);
  auto q2_missing = ConfigOf(WriteMoeHeader("moe_qwen2_missing", "qwen2moe", {}, {}));
  EXPECT_NE(q2_missing.status().message().find("qwen2moe.expert_shared_feed_forward_length"),
            std::string::npos)
      << q2_missing.status().message();

  auto missing = ConfigOf(WriteMoeHeader("moe_missing", "qwen3moe", {"expert_count"}, {}));
  EXPECT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("qwen3moe.expert_count"), std::string::npos)
      << missing.status().message();

  auto too_many = ConfigOf(WriteMoeHeader("moe_too_many", "qwen3moe", {"expert_used_count"},
                                          {{"expert_used_count", 9}}));
  EXPECT_FALSE(too_many.ok());
  EXPECT_NE(too_many.status().message().find("qwen3moe.expert_used_count\" = 9"), std::string::npos)
      << too_many.status().message();

  auto shared = ConfigOf(
      WriteMoeHeader("moe_shared", "qwen3moe", {}, {{"expert_shared_feed_forward_length", 64}}));
  EXPECT_EQ(shared.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(shared.status().message().find("qwen3moe.expert_shared_feed_forward_length"),
            std::string::npos)
      << shared.status().message();

  // Mixtral is a llama file with experts; its experts are as wide as
  // feed_forward_length says unless an expert width is given, and their
  // weights are renormalised over the top k.
  auto mixtral = ConfigOf(WriteMoeHeader("moe_llama", "llama", {"expert_feed_forward_length"}, {}));
  ASSERT_TRUE(mixtral.ok()) << mixtral.status().ToString();
  EXPECT_EQ(mixtral->arch, ModelArch::kLlama);
  EXPECT_TRUE(mixtral->is_moe());
  EXPECT_EQ(mixtral->n_ff_exp, 96);
  EXPECT_TRUE(mixtral->norm_topk_prob);
  auto mixtral_width = ConfigOf(WriteMoeHeader("moe_llama_width", "llama", {}, {}));
  ASSERT_TRUE(mixtral_width.ok()) << mixtral_width.status().ToString();
  EXPECT_EQ(mixtral_width->n_ff_exp, 32);
  // Other dense archs with experts are refused by name, not run as dense.
  auto phi3 = ConfigOf(WriteMoeHeader("moe_phi3", "phi3", {}, {}));
  EXPECT_EQ(phi3.status().code(), StatusCode::kUnimplemented);
  EXPECT_NE(phi3.status().message().find("phi3.expert_count"), std::string::npos)
      << phi3.status().message();
}

// The model files the tests write (tens of MB each, named by process) go
// when the test program ends.
void RemoveAtExit(const std::string& path) {
  static struct Files {
    std::vector<std::string> paths;
    ~Files() {
      for (const std::string& p : paths) std::filesystem::remove(p);
    }
  } files;
  files.paths.push_back(path);
}

// A 2-layer `shape` (qwen3-moe-tiny unless said) with `experts` experts,
// `used` per token, the 32k llama-spm vocabulary, in `mix`; written once per
// test process.
std::string SyntheticMoe(int experts, int used, SyntheticMix mix,
                         const std::string& shape = "qwen3-moe-tiny") {
  SynthesizeOptions o;
  o.shape = *FindSyntheticShape(shape);
  o.shape.n_layer = 2;
  o.shape.n_expert = experts;
  o.shape.n_expert_used = used;
  o.shape.default_chat_template.clear();
  o.mix = mix;
  o.vocab_path = kShared + "/vocab/ggml-vocab-llama-spm.gguf";
  o.seed = 5;
  const std::string path = ::testing::TempDir() + "/" + shape + "_" + std::to_string(experts) +
                           "x" + std::to_string(used) + "_" + std::string(SyntheticMixName(mix)) +
                           "_" + std::to_string(::getpid()) + ".gguf";
  if (!std::filesystem::exists(path)) {
    o.output_path = path;
    ThreadPool pool(2);
    auto report = SynthesizeModel(o, pool);
    EXPECT_TRUE(report.ok()) << report.status().ToString();
    RemoveAtExit(path);
  }
  return path;
}

// The same weights as a dense qwen3: one expert's matrices become the layer's
// ffn_gate, ffn_up and ffn_down, the router goes, qwen3moe.* keys become
// qwen3.* and the feed-forward width is the expert's.
std::string RewriteAsDense(const std::string& moe_path) {
  auto file = gguf::GgufFile::Open(moe_path);
  EXPECT_TRUE(file.ok()) << file.status().ToString();
  gguf::GgufWriter w;
  for (const gguf::KeyValue& kv : (*file)->metadata()) {
    std::string key(kv.key);
    if (key == "general.architecture") {
      w.SetString(key, "qwen3");
      continue;
    }
    if (key.starts_with("qwen3moe.")) {
      key = "qwen3." + key.substr(9);
      if (key.find("expert") != std::string::npos || key == "qwen3.feed_forward_length") continue;
    }
    w.SetValue(key, kv.value);
  }
  w.SetUint32("qwen3.feed_forward_length",
              *(*file)->GetUint("qwen3moe.expert_feed_forward_length"));
  for (const gguf::TensorInfo& t : (*file)->tensors()) {
    std::string name(t.name);
    if (name.ends_with("ffn_gate_inp.weight")) continue;
    std::vector<int64_t> dims = t.dims;
    if (const size_t at = name.find("_exps"); at != std::string::npos) {
      name.erase(at, 5);
      EXPECT_EQ(dims.back(), 1);
      dims.pop_back();
    }
    EXPECT_TRUE(
        w.AddTensor(name, t.type(), dims, std::span<const uint8_t>(t.data, t.num_bytes)).ok());
  }
  const std::string path = moe_path + ".dense.gguf";
  EXPECT_TRUE(w.WriteFile(path).ok());
  RemoveAtExit(path);
  return path;
}

// Logits of every position of `tokens`, prefilled in one step on `exec`.
std::vector<float> PrefillLogits(Executor& exec, const std::vector<int32_t>& tokens) {
  const std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 6, 7};
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.sequences.push_back({0, static_cast<int32_t>(tokens.size()), 0, table, LogitsMode::kAll});
  ForwardOutput out;
  EXPECT_TRUE(exec.Forward(batch, &out).ok());
  return out.logits;
}

// The same on one CPU device of 2 threads.
std::vector<float> PrefillLogits(const Model& model, const std::vector<int32_t>& tokens) {
  const ModelConfig& c = model.config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto exec = ModelExecutor::CreateOnCpu(model, layout, 8, 2);
  EXPECT_TRUE(exec.ok()) << exec.status().ToString();
  return exec.ok() ? PrefillLogits(**exec, tokens) : std::vector<float>();
}

const std::vector<int32_t> kTokens = {1,     450, 4996, 17354, 1701, 432,
                                      29892, 338, 263,  1243,  310,  278};

TEST(MoeForwardTest, OneExpertIsTheDenseFeedForwardOfItsWeights) {
  for (SyntheticMix mix : {SyntheticMix::kF16, SyntheticMix::kQ8_0}) {
    const std::string moe_path = SyntheticMoe(1, 1, mix);
    auto moe = Model::Load(moe_path);
    ASSERT_TRUE(moe.ok()) << moe.status().ToString();
    ASSERT_TRUE((*moe)->config().is_moe());
    auto dense = Model::Load(RewriteAsDense(moe_path));
    ASSERT_TRUE(dense.ok()) << dense.status().ToString();
    ASSERT_FALSE((*dense)->config().is_moe());
    const std::vector<float> a = PrefillLogits(**moe, kTokens);
    const std::vector<float> b = PrefillLogits(**dense, kTokens);
    ASSERT_EQ(a.size(), b.size());
    ASSERT_FALSE(a.empty());
    EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0)
        << SyntheticMixName(mix) << ": the mixture of one expert differs from the dense layer";
  }
}

// 8 experts, 2 per token: a prefill in one step (the step's tokens grouped
// by expert) gives every position the logits it gets when the same tokens
// come one a step. qwen2moe adds a shared expert on every token.
class MoeShapeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeShapeTest, TokensGroupedByExpertGetTheLogitsTheyGetAlone) {
  auto model = Model::Load(SyntheticMoe(8, 2, SyntheticMix::kQ8_0, GetParam()));
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  const ModelConfig& c = (*model)->config();
  uint64_t active = (*model)->weights().output.num_bytes();
  for (const LayerWeights& l : (*model)->weights().layers) {
    active +=
        l.wq.num_bytes() + l.wk.num_bytes() + l.wv.num_bytes() + l.wo.num_bytes() +
        l.w_gate_inp.num_bytes() + l.gate_shexp.num_bytes() + l.up_shexp.num_bytes() +
        l.down_shexp.num_bytes() +
        2 * (l.gate_exps[0].num_bytes() + l.up_exps[0].num_bytes() + l.down_exps[0].num_bytes());
  }
  EXPECT_EQ((*model)->weights().BytesPerToken(), active)
      << "the decode roofline counts the router and 2 experts a layer";
  const std::vector<float> whole = PrefillLogits(**model, kTokens);
  ASSERT_EQ(whole.size(), kTokens.size() * c.n_vocab);

  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto exec = ModelExecutor::CreateOnCpu(**model, layout, 8, 2);
  ASSERT_TRUE(exec.ok());
  std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 6, 7};
  for (size_t i = 0; i < kTokens.size(); ++i) {
    ForwardBatch batch;
    batch.tokens = {kTokens[i]};
    batch.sequences.push_back({0, 1, static_cast<int32_t>(i), table, LogitsMode::kLast});
    ForwardOutput out;
    ASSERT_TRUE((*exec)->Forward(batch, &out).ok());
    EXPECT_EQ(std::memcmp(out.Row(0), whole.data() + i * c.n_vocab, c.n_vocab * sizeof(float)), 0)
        << "position " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeShapeTest,
                         ::testing::Values("qwen3-moe-tiny", "qwen2-moe-tiny", "mixtral-tiny"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

TEST(MoeForwardTest, ALayerSplitIsBitIdentical) {
  auto model = Model::Load(SyntheticMoe(8, 2, SyntheticMix::kQ8_0));
  ASSERT_TRUE(model.ok());
  const ModelConfig& c = (*model)->config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto layer = PlanOptions::Parse("cpu:0,cpu:1", "layer", "", 1);
  ASSERT_TRUE(layer.ok());
  auto split = ModelExecutor::Create(**model, layout, *layer, 8);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  const std::vector<float> two = PrefillLogits(**split, kTokens);
  const std::vector<float> one = PrefillLogits(**model, kTokens);
  ASSERT_EQ(two.size(), one.size());
  EXPECT_EQ(std::memcmp(two.data(), one.data(), one.size() * sizeof(float)), 0);
}

// A tensor split cuts every expert (and the shared expert) between the
// devices; the all-reduce sums their shares, in another order than one device
// sums the columns, so logits agree to rounding. F16 weights keep that
// rounding small; the top token agrees at every position.
class MoeTensorSplitTest : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeTensorSplitTest, EveryExpertIsCutBetweenTheDevices) {
  auto model = Model::Load(SyntheticMoe(8, 2, SyntheticMix::kF16, GetParam()));
  ASSERT_TRUE(model.ok());
  const ModelConfig& c = (*model)->config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto options = PlanOptions::Parse("cpu:0,cpu:1", "tensor", "", 1);
  ASSERT_TRUE(options.ok());
  auto split = ModelExecutor::Create(**model, layout, *options, 8);
  ASSERT_TRUE(split.ok()) << split.status().ToString();
  const std::vector<float> two = PrefillLogits(**split, kTokens);
  const std::vector<float> one = PrefillLogits(**model, kTokens);
  ASSERT_EQ(two.size(), one.size());
  ASSERT_FALSE(one.empty());
  double max_diff = 0.0;
  for (size_t i = 0; i < one.size(); ++i) {
    max_diff = std::max(max_diff, std::fabs(static_cast<double>(one[i]) - two[i]));
  }
  int agree = 0;
  for (size_t t = 0; t < kTokens.size(); ++t) {
    const float* a = one.data() + t * c.n_vocab;
    const float* b = two.data() + t * c.n_vocab;
    agree += std::max_element(a, a + c.n_vocab) - a == std::max_element(b, b + c.n_vocab) - b;
  }
  std::printf("[ moe tensor split ] %s: top-1 %d/%zu, max |d logit| %.3g\n", GetParam().c_str(),
              agree, kTokens.size(), max_diff);
  EXPECT_EQ(agree, static_cast<int>(kTokens.size()));
  EXPECT_LT(max_diff, 0.02);
  EXPECT_GT(max_diff, 0.0) << "the split should sum in another order";
}

INSTANTIATE_TEST_SUITE_P(Shapes, MoeTensorSplitTest,
                         ::testing::Values("qwen3-moe-tiny", "qwen2-moe-tiny"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace kvmesh
