// A model split over several CPU devices (worker/runtime/parallel_plan.h)
// against the same model on one device:
//  - layer split over 2 and 3 devices: every logit bit-identical, through
//    chunked prefill, decode, a batch that mixes a prefix-cache hit with a
//    decode, and the recompute a preemption does; the KV pages too.
//  - tensor split over 2 and 4 devices: the reduction order differs, so the
//    teacher-forced top-1 must agree at >= 99% of positions and the largest
//    |Δ logit| is printed; layer 0's pages are bit-identical (nothing is
//    reduced before them), which checks that each device's heads land at
//    their place in the shared page format.
// Models: stories260K, tinystories-d64 (F32, head_dim 64, GQA) and a
// synthetic llama-1b of 3 layers with a 32k vocabulary (Q4_K_M mix: K-quant
// column cuts, a Q6_K head).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <numeric>

#include "common/thread_pool.h"
#include "tests/support/forward_scenario.h"
#include "worker/model/model.h"
#include "worker/model/synthetic_model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kShared = KVMESH_SHARED_DIR;

std::unique_ptr<Model> LoadShared(const std::string& file) {
  auto model = Model::Load(kShared + "/models/" + file);
  EXPECT_TRUE(model.ok()) << model.status().ToString() << " (needs ../shared/models)";
  return model.ok() ? std::move(model).value() : nullptr;
}

// A llama-1b (Llama 3.2 1B shape: 32 query / 8 KV heads of 64, n_ff 8192)
// cut to 3 layers and given the 32k llama-spm vocabulary instead of the 128k
// one, made once per test binary: the full model takes minutes to
// synthesize on 2 cores (bench/ runs it whole).
const Model* SyntheticLlama1b() {
  static std::unique_ptr<Model> model = [] {
    SynthesizeOptions o;
    o.shape = *FindSyntheticShape("llama-1b");
    o.shape.n_layer = 3;
    o.mix = SyntheticMix::kQ4_K_M;
    o.vocab_path = kShared + "/vocab/ggml-vocab-llama-spm.gguf";
    // The file is the same bytes whoever makes it (seeded), so each test
    // process reuses one another made; a new one is written aside and
    // renamed into place, so none reads half a file.
    const std::string path = ::testing::TempDir() + "/split_llama1b_3l_q4_k_m_s11.gguf";
    o.seed = 11;
    if (!std::filesystem::exists(path)) {
      o.output_path = path + "." + std::to_string(::getpid());
      ThreadPool pool(2);
      auto report = SynthesizeModel(o, pool);
      EXPECT_TRUE(report.ok()) << report.status().ToString();
      std::filesystem::rename(o.output_path, path);
    }
    auto m = Model::Load(path);
    EXPECT_TRUE(m.ok()) << m.status().ToString();
    return m.ok() ? std::move(m).value() : nullptr;
  }();
  return model.get();
}

std::unique_ptr<ModelExecutor> MakeExecutor(const Model& model, const std::string& devices,
                                            const std::string& split, int64_t blocks) {
  const ModelConfig& c = model.config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto options = PlanOptions::Parse(devices, split, "", devices.empty() ? 2 : 1);
  EXPECT_TRUE(options.ok()) << options.status().ToString();
  if (!options.ok()) return nullptr;
  auto exec = ModelExecutor::Create(model, layout, *options, blocks);
  EXPECT_TRUE(exec.ok()) << exec.status().ToString();
  return exec.ok() ? std::move(exec).value() : nullptr;
}

// Everything a scenario produced: the logits of each step, then the bytes of
// every KV block.
struct Trace {
  std::vector<std::vector<float>> logits;
  std::vector<std::vector<uint8_t>> blocks;
};

// The shared forward scenario (tests/support/forward_scenario.h), then the
// bytes of its 10 blocks.
Trace RunScenario(ModelExecutor& exec, int n_vocab) {
  Trace trace;
  trace.logits = testing::RunForwardScenario(exec, n_vocab);
  for (int32_t block = 0; block < 10; ++block) {
    trace.blocks.emplace_back();
    EXPECT_TRUE(exec.ReadBlock(block, &trace.blocks.back()).ok());
  }
  return trace;
}

bool SameBits(const std::vector<float>& x, const std::vector<float>& y) {
  return x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size() * sizeof(float)) == 0;
}

struct ModelCase {
  std::string name;
  std::function<const Model*()> model;
};
void PrintTo(const ModelCase& c, std::ostream* os) { *os << c.name; }

std::vector<ModelCase> Models() {
  static std::unique_ptr<Model> stories = LoadShared("stories260K.gguf");
  static std::unique_ptr<Model> d64 = LoadShared("tinystories-d64.gguf");
  return {{"stories260K", [] { return stories.get(); }},
          {"tinystories_d64", [] { return d64.get(); }},
          {"llama1b_3l_q4_k_m", [] { return SyntheticLlama1b(); }}};
}

class SplitTest : public ::testing::TestWithParam<ModelCase> {};

TEST_P(SplitTest, LayerSplitIsBitIdenticalToOneDevice) {
  const Model* model = GetParam().model();
  ASSERT_NE(model, nullptr);
  const int n_vocab = model->config().n_vocab;
  auto one = MakeExecutor(*model, "", "", 10);
  ASSERT_NE(one, nullptr);
  const Trace want = RunScenario(*one, n_vocab);
  // Batch invariance, which the split relies on: the recomputed B equals the
  // prefix-hit B on the positions they share.
  const size_t row = n_vocab;
  ASSERT_EQ(want.logits[5].size(), 19 * row);
  EXPECT_EQ(std::memcmp(want.logits[6].data() + 32 * row, want.logits[5].data(),
                        18 * row * sizeof(float)),
            0);
  for (const std::string devices : {"cpu:0,cpu:1", "cpu:0,cpu:1,cpu:2"}) {
    auto split = MakeExecutor(*model, devices, "layer", 10);
    ASSERT_NE(split, nullptr);
    const Trace got = RunScenario(*split, n_vocab);
    ASSERT_EQ(got.logits.size(), want.logits.size());
    for (size_t i = 0; i < want.logits.size(); ++i) {
      EXPECT_TRUE(SameBits(got.logits[i], want.logits[i])) << devices << ": step " << i;
    }
    for (size_t b = 0; b < want.blocks.size(); ++b) {
      EXPECT_TRUE(got.blocks[b] == want.blocks[b]) << devices << ": block " << b;
    }
  }
}

TEST_P(SplitTest, TensorSplitAgreesWithOneDevice) {
  const Model* model = GetParam().model();
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  auto one = MakeExecutor(*model, "", "", 10);
  ASSERT_NE(one, nullptr);
  const Trace want = RunScenario(*one, c.n_vocab);
  const size_t layer0_bytes =
      (KvLayout{c.n_layer, c.n_head_kv, c.head_dim}).bytes_per_block() / c.n_layer;
  for (const std::string devices : {"cpu:0,cpu:1", "cpu:0,cpu:1,cpu:2,cpu:3"}) {
    if (c.n_head_kv % (devices == "cpu:0,cpu:1" ? 2 : 4) != 0) continue;
    auto split = MakeExecutor(*model, devices, "tensor", 10);
    ASSERT_NE(split, nullptr);
    const Trace got = RunScenario(*split, c.n_vocab);
    int rows = 0, agree = 0;
    double max_diff = 0;
    for (size_t i = 0; i < want.logits.size(); ++i) {
      ASSERT_EQ(got.logits[i].size(), want.logits[i].size());
      for (size_t r = 0; r < want.logits[i].size() / c.n_vocab; ++r) {
        const float* x = want.logits[i].data() + r * c.n_vocab;
        const float* y = got.logits[i].data() + r * c.n_vocab;
        ++rows;
        agree += std::max_element(x, x + c.n_vocab) - x == std::max_element(y, y + c.n_vocab) - y;
        for (int v = 0; v < c.n_vocab; ++v) {
          max_diff = std::max(max_diff, std::fabs(static_cast<double>(x[v]) - y[v]));
        }
      }
    }
    std::printf("[ tensor split ] %-18s %-24s top-1 %d/%d, max |d logit| %.3g\n",
                GetParam().name.c_str(), devices.c_str(), agree, rows, max_diff);
    // F32 models follow the unsplit one to ~1e-3. With 8-bit activations a
    // rounding change grows to the size of the quantization noise within a
    // layer (0.3 here), and a random model's top two are often that close:
    // 95% there, measured at >= 99% on the whole llama-1b by
    // bench/split_agreement.sh over many more positions.
    const bool quantized = model->weights().layers[0].wq.type != TensorType::kF32;
    EXPECT_GE(agree, (quantized ? 0.95 : 0.99) * rows) << devices;
    for (size_t b = 0; b < want.blocks.size(); ++b) {
      EXPECT_EQ(std::memcmp(got.blocks[b].data(), want.blocks[b].data(), layer0_bytes), 0)
          << devices << ": layer 0 of block " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Models, SplitTest, ::testing::ValuesIn(Models()),
                         [](const ::testing::TestParamInfo<ModelCase>& info) {
                           return info.param.name;
                         });

TEST(SplitErrorsTest, CountsThatDoNotDivideAreNamed) {
  auto model = LoadShared("tinystories-d64.gguf");  // 2 KV heads
  ASSERT_NE(model, nullptr);
  auto options = PlanOptions::Parse("cpu:0,cpu:1,cpu:2,cpu:3", "tensor", "", 1);
  ASSERT_TRUE(options.ok());
  auto plan = ParallelPlan::Make(model->config(), model->weights(), *options);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("the model's 2 KV heads do not divide by 4"),
            std::string::npos)
      << plan.status().ToString();
}

TEST(SplitErrorsTest, PinnedDevicesComputeTheSameAndMissingCoresAreNamed) {
  auto model = LoadShared("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  const int n_vocab = model->config().n_vocab;
  auto one = MakeExecutor(*model, "", "", 10);
  auto pinned = MakeExecutor(*model, "cpu:0@0,cpu:1@1", "layer", 10);
  ASSERT_NE(one, nullptr);
  ASSERT_NE(pinned, nullptr);
  const Trace want = RunScenario(*one, n_vocab);
  const Trace got = RunScenario(*pinned, n_vocab);
  for (size_t i = 0; i < want.logits.size(); ++i)
    EXPECT_TRUE(SameBits(got.logits[i], want.logits[i]));

  const ModelConfig& c = model->config();
  auto options = PlanOptions::Parse("cpu:0@4000", "", "", 1);
  ASSERT_TRUE(options.ok());
  auto plan = ParallelPlan::Make(c, model->weights(), *options);
  ASSERT_TRUE(plan.ok());
  auto exec = ModelExecutor::Create(*model, KvLayout{c.n_layer, c.n_head_kv, c.head_dim}, *plan, 4);
  ASSERT_FALSE(exec.ok());
  EXPECT_NE(exec.status().message().find("device cpu:0@4000: "), std::string::npos)
      << exec.status().ToString();
  EXPECT_NE(exec.status().message().find("4000"), std::string::npos);
}

TEST(SplitMemoryFitTest, EachDeviceHoldsItsShareAndErrorsNameTheDevice) {
  auto model = LoadShared("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  const ModelConfig& c = model->config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim};  // 640 B per token, f16
  auto plan_for = [&](const std::string& devices, const std::string& split,
                      const std::string& layer_split = "") {
    auto options = PlanOptions::Parse(devices, split, layer_split, 1);
    EXPECT_TRUE(options.ok());
    return ParallelPlan::Make(c, model->weights(), *options).value();
  };
  // 1 MiB per device. One device: 1 MiB / 10240 B per block = 102 blocks.
  auto one = FitKvBlocksOnDevices("1MiB", layout, plan_for("", ""), 256);
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_EQ(one->num_blocks, 102);
  // Layers 3 + 2: the 3-layer device holds 3/5 of a block, 6144 B: 170 blocks.
  auto layer = FitKvBlocksOnDevices("1MiB", layout, plan_for("cpu:0,cpu:1", "layer"), 256);
  ASSERT_TRUE(layer.ok()) << layer.status().ToString();
  EXPECT_EQ(layer->num_blocks, 170);
  EXPECT_EQ(layer->bytes_used, 170u * 10240u);
  // Two KV heads of four each: half a block per device.
  auto tensor = FitKvBlocksOnDevices("1MiB", layout, plan_for("cpu:0,cpu:1", "tensor"), 256);
  ASSERT_TRUE(tensor.ok());
  EXPECT_EQ(tensor->num_blocks, 204);
  // 40 KiB holds 20 blocks of the 1-layer device's 2 KiB but only 5 of the
  // 4-layer one's 8 KiB: too few for a context of 256 tokens (16 blocks).
  auto tight = FitKvBlocksOnDevices("40KiB", layout, plan_for("cpu:0,cpu:1", "layer", "1,4"), 256);
  ASSERT_FALSE(tight.ok());
  EXPECT_NE(tight.status().message().find("device cpu:1 (layers 1-4, output"), std::string::npos)
      << tight.status().ToString();
  EXPECT_NE(tight.status().message().find("needs 16 blocks"), std::string::npos)
      << tight.status().ToString();
}

}  // namespace
}  // namespace kvmesh
