// Model families served end to end: a worker process loads a synthetic
// model and a router in front of it answers a greedy request with the tokens
// the same model gives in process on the same plan (prefill, then one token
// a step on the executor). Mixtures of experts (8 experts, 2 per token:
// qwen3moe and Mixtral on one device, qwen2moe with its shared expert cut
// over 2 devices by a tensor split), gemma2 on one device, and gemma3 split
// by layer over 2 devices (its windowed and global layers rotate
// differently, and the split must keep each layer's own); tiny-mistral, a
// llama windowed on every layer. The windowed models are served with window
// pages too (--kv-window-pages on): the prompt is longer than their
// 32-position windows, so pages the window has passed are released while the
// request runs, and the same request again is served from the prefix cache
// (with the window pages of its last blocks) and gets the same tokens.
#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "kvmesh/v1/inference.grpc.pb.h"
#include "tests/support/cluster.h"
#include "worker/model/model.h"
#include "worker/model/synthetic_model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kShared = KVMESH_SHARED_DIR;

// A served model: a synthetic shape, and how the worker holds it.
struct Case {
  std::string shape;
  std::string split;  // "": one device; "tensor" or "layer" over 2 devices
  bool window_pages = false;
  std::string layer_split = "";  // --layer-split, e.g. "1,2"; "": balanced
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.shape << (c.split.empty() ? " on one device" : " split " + c.split)
      << (c.window_pages ? " with window pages" : "");
}

std::string SyntheticFile(const std::string& shape) {
  SynthesizeOptions o;
  o.shape = *FindSyntheticShape(shape);
  // Two layers, or one period of a window pattern (both kinds of layer).
  o.shape.n_layer = std::max(2, o.shape.sliding_window_pattern);
  o.shape.default_chat_template.clear();
  o.mix = SyntheticMix::kQ8_0;
  o.vocab_path = kShared + "/vocab/ggml-vocab-llama-spm.gguf";
  o.output_path =
      ::testing::TempDir() + "/family_e2e_" + shape + "_" + std::to_string(::getpid()) + ".gguf";
  ThreadPool pool(2);
  auto report = SynthesizeModel(o, pool);
  EXPECT_TRUE(report.ok()) << report.status().ToString();
  return o.output_path;
}

// Greedy tokens after `prompt`, computed in this process on the plan the
// worker uses.
std::vector<int32_t> GreedyInProcess(const Model& model, const std::string& split,
                                     const std::string& layer_split,
                                     const std::vector<int32_t>& prompt, int n) {
  const ModelConfig& c = model.config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto options = PlanOptions::Parse(split.empty() ? "" : "cpu:0,cpu:1", split, layer_split,
                                    split.empty() ? 2 : 1);
  EXPECT_TRUE(options.ok()) << options.status().ToString();
  auto exec = ModelExecutor::Create(model, layout, *options, 8);
  EXPECT_TRUE(exec.ok()) << exec.status().ToString();
  std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 6, 7};
  std::vector<int32_t> out;
  ForwardBatch batch;
  batch.tokens = prompt;
  batch.sequences.push_back({0, static_cast<int32_t>(prompt.size()), 0, table, LogitsMode::kLast});
  int32_t pos = static_cast<int32_t>(prompt.size());
  for (int i = 0; i < n; ++i) {
    ForwardOutput logits;
    EXPECT_TRUE((*exec)->Forward(batch, &logits).ok());
    const float* row = logits.Row(0);
    out.push_back(static_cast<int32_t>(std::max_element(row, row + logits.n_vocab) - row));
    batch.tokens = {out.back()};
    batch.sequences = {{0, 1, pos++, table, LogitsMode::kLast}};
  }
  return out;
}

class FamilyClusterTest : public ::testing::TestWithParam<Case> {};

TEST_P(FamilyClusterTest, ARouterServesTheModelAsTheEngineComputesIt) {
  const Case c = GetParam();
  const std::string path = SyntheticFile(c.shape);
  struct RemoveWhenDone {  // tens of MB, named by process
    std::string path;
    ~RemoveWhenDone() { std::filesystem::remove(path); }
  } cleanup{path};
  auto model = Model::Load(path);
  ASSERT_TRUE(model.ok()) << model.status().ToString();
  // 72 tokens: past the gemmas' 32-position window, within the 128
  // positions GreedyInProcess holds.
  std::vector<int32_t> prompt = {1};
  const std::vector<int32_t> words = {450, 4996, 17354, 1701, 432, 29892, 338, 263, 1243};
  while (prompt.size() < 72) prompt.push_back(words[prompt.size() % words.size()]);
  const std::vector<int32_t> want = GreedyInProcess(**model, c.split, c.layer_split, prompt, 8);

  std::vector<std::string> args = {"--model", path};
  if (!c.split.empty()) {
    args.insert(args.end(), {"--devices", "cpu:0,cpu:1", "--split", c.split, "--threads", "1"});
  }
  if (c.window_pages) args.insert(args.end(), {"--kv-window-pages", "on"});
  if (!c.layer_split.empty()) args.insert(args.end(), {"--layer-split", c.layer_split});
  testing::ProcessHandle worker = testing::StartWorker(KVMESH_WORKER_BINARY, args, 0, "family_w0");
  ASSERT_TRUE(worker.ok());
  testing::ProcessHandle router =
      testing::StartRouter(KVMESH_ROUTER_BINARY, {worker.grpc}, {}, "family_router");
  ASSERT_TRUE(router.ok());
  ASSERT_TRUE(testing::WaitForHealthyWorkers(router.grpc, 1, std::chrono::seconds(30)));
  auto stub =
      v1::Inference::NewStub(grpc::CreateChannel(router.grpc, grpc::InsecureChannelCredentials()));
  v1::GenerateTextRequest req;
  for (int32_t t : prompt) req.add_prompt_tokens(t);
  req.mutable_options()->set_max_tokens(8);
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  req.mutable_options()->set_ignore_eos(true);
  for (int round = 0; round < 2; ++round) {
    grpc::ClientContext ctx;
    auto reader = stub->Generate(&ctx, req);
    v1::GenerateTextResponse message;
    std::vector<int32_t> got;
    uint32_t cached = 0;
    while (reader->Read(&message)) {
      got.insert(got.end(), message.tokens().begin(), message.tokens().end());
      if (message.has_usage()) cached = message.usage().cached_tokens();
    }
    const grpc::Status status = reader->Finish();
    ASSERT_TRUE(status.ok()) << status.error_message();
    EXPECT_EQ(got, want) << "round " << round;
    // The whole blocks of the prompt before its last token: 4 of 16.
    EXPECT_EQ(cached, round == 0 ? 0u : 64u) << "round " << round;
  }
  // The worker says it has window pages exactly when asked to.
  const std::string metrics = testing::HttpGet(worker.http, "/metrics");
  EXPECT_EQ(metrics.find("kvmesh_worker_kv_window_pages{state=\"capacity\"}") != std::string::npos,
            c.window_pages)
      << metrics.substr(0, 2000);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FamilyClusterTest,
    ::testing::Values(Case{"qwen3-moe-tiny", ""}, Case{"mixtral-tiny", ""},
                      Case{"qwen2-moe-tiny", "tensor"}, Case{"tiny-gemma2", ""},
                      Case{"tiny-gemma3", "layer"}, Case{"tiny-gemma2", "", true},
                      // Layers 0 | 1, 2: both devices gain from window pages.
                      Case{"tiny-gemma3", "layer", true, "1,2"}, Case{"tiny-mistral", ""},
                      Case{"tiny-mistral", "", true}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.shape + "_" +
                         (info.param.split.empty() ? "one_device" : info.param.split) +
                         (info.param.window_pages ? "_window_pages" : "");
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

}  // namespace
}  // namespace kvmesh
