// Golden tests: kvmesh's forward pass against llama.cpp's outputs in
// ../shared/golden (see the README there for how they were produced).
//
//  - next-token logits of stories260K with an f32 KV cache: max relative error;
//  - greedy generations (f16 KV, as llama.cpp's default) token for token;
//  - quantized models by teacher forcing: top-1 agreement and the largest
//    |Δ logprob| over llama.cpp's top-10 at each step;
//  - the same on a GPU (GoldenGpuTest), skipped without one.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

using nlohmann::json;

const std::string kShared = KVMESH_SHARED_DIR;

json LoadJson(const std::string& rel) {
  const std::string path = kShared + "/golden/" + rel;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << path << " is missing: golden tests need ../shared/golden beside the checkout";
    return json::array();
  }
  return json::parse(in);
}

std::unique_ptr<Model> LoadModel(const std::string& file) {
  const std::string path = kShared + "/models/" + file;
  auto model = Model::Load(path);
  if (!model.ok()) {
    ADD_FAILURE() << model.status().ToString()
                  << " (golden tests need ../shared/models beside the checkout)";
    return nullptr;
  }
  return std::move(model).value();
}

// Runs `tokens` through a fresh executor in prefill chunks of `chunk` tokens and
// returns the logits of every position (rows of n_vocab).
// An executor over `devices` ("" for one device of 2 threads) split by `split`.
std::unique_ptr<ModelExecutor> MakeExecutor(const Model& model, const KvLayout& layout,
                                            int64_t blocks, const std::string& devices = "",
                                            const std::string& split = "") {
  auto options = PlanOptions::Parse(devices, split, "", devices.empty() ? 2 : 1);
  EXPECT_TRUE(options.ok()) << options.status().ToString();
  if (!options.ok()) return nullptr;
  auto exec = ModelExecutor::Create(model, layout, *options, blocks);
  EXPECT_TRUE(exec.ok()) << exec.status().ToString();
  return exec.ok() ? std::move(exec).value() : nullptr;
}

std::vector<float> AllLogits(const Model& model, TensorType kv_type,
                             const std::vector<int32_t>& tokens, int chunk = 1 << 30,
                             const std::string& devices = "") {
  const ModelConfig& c = model.config();
  KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, kv_type, kv_type};
  const int64_t blocks = (static_cast<int64_t>(tokens.size()) + 15) / 16;
  auto exec = MakeExecutor(model, layout, blocks, devices);
  if (exec == nullptr) return {};
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> out;
  for (size_t start = 0; start < tokens.size(); start += chunk) {
    const size_t n = std::min<size_t>(chunk, tokens.size() - start);
    ForwardBatch batch;
    batch.tokens.assign(tokens.begin() + start, tokens.begin() + start + n);
    batch.sequences.push_back(
        {0, static_cast<int32_t>(n), static_cast<int32_t>(start), table, LogitsMode::kAll});
    ForwardOutput fo;
    Status s = exec->Forward(batch, &fo);
    EXPECT_TRUE(s.ok()) << s.ToString();
    out.insert(out.end(), fo.logits.begin(), fo.logits.end());
  }
  return out;
}

int Argmax(const float* v, int n) { return static_cast<int>(std::max_element(v, v + n) - v); }

double LogSumExp(const float* v, int n) {
  const double m = *std::max_element(v, v + n);
  double s = 0;
  for (int i = 0; i < n; ++i) s += std::exp(v[i] - m);
  return m + std::log(s);
}

void ExpectNextTokenLogitsMatchInF32(const std::string& devices) {
  auto model = LoadModel("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  const json cases = LoadJson("stories260K/next_token_logits_kv_f32.json");
  ASSERT_EQ(cases.size(), 6u);
  double worst = 0;
  for (const json& c : cases) {
    const auto tokens = c["prompt_tokens"].get<std::vector<int32_t>>();
    const auto want = c["logits"].get<std::vector<float>>();
    const std::vector<float> all = AllLogits(*model, TensorType::kF32, tokens, 1 << 30, devices);
    ASSERT_EQ(all.size(), tokens.size() * want.size());
    const float* got = all.data() + (tokens.size() - 1) * want.size();
    double max_diff = 0, max_abs = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_diff = std::max(max_diff, std::fabs(static_cast<double>(got[i]) - want[i]));
      max_abs = std::max(max_abs, std::fabs(static_cast<double>(want[i])));
    }
    const double rel = max_diff / max_abs;
    worst = std::max(worst, rel);
    const std::string prompt = c["prompt"].get<std::string>();
    std::printf("[ logits ] \"%s\"%*s max |diff| %.3g, max relative error %.3g\n", prompt.c_str(),
                static_cast<int>(30 - std::min<size_t>(30, prompt.size())), "", max_diff, rel);
    EXPECT_LT(rel, 1e-4) << c["prompt"];
  }
  std::printf("[ logits ] worst max relative error over %zu prompts%s: %.3g\n", cases.size(),
              devices.empty() ? "" : (" on " + devices).c_str(), worst);
}

TEST(GoldenModelTest, NextTokenLogitsMatchInF32) { ExpectNextTokenLogitsMatchInF32(""); }

// Greedy decoding one token per step (as a server does), f16 KV cache.
std::vector<int32_t> GreedyDecode(const Model& model, std::vector<int32_t> prompt, int n,
                                  const std::string& devices, const std::string& split) {
  const ModelConfig& c = model.config();
  KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  const int64_t blocks = (static_cast<int64_t>(prompt.size()) + n + 15) / 16;
  auto exec = MakeExecutor(model, layout, blocks, devices, split);
  if (exec == nullptr) return {};
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::vector<int32_t> generated;
  ForwardBatch batch;
  batch.tokens = prompt;
  batch.sequences.push_back({0, static_cast<int32_t>(prompt.size()), 0, table, LogitsMode::kLast});
  int32_t pos = 0;
  for (int i = 0; i < n; ++i) {
    ForwardOutput out;
    Status s = exec->Forward(batch, &out);
    EXPECT_TRUE(s.ok()) << s.ToString();
    if (!s.ok()) break;
    const int32_t next = Argmax(out.Row(0), out.n_vocab);
    generated.push_back(next);
    pos += batch.sequences[0].num_tokens;
    batch.tokens = {next};
    batch.sequences[0] = {0, 1, pos, table, LogitsMode::kLast};
  }
  return generated;
}

void ExpectGreedyMatches(const std::string& model_file, const std::string& golden,
                         const std::string& devices = "", const std::string& split = "") {
  auto model = LoadModel(model_file);
  ASSERT_NE(model, nullptr);
  const json cases = LoadJson(golden);
  ASSERT_GE(cases.size(), 5u);
  int matched = 0;
  for (const json& c : cases) {
    const auto prompt = c["prompt_tokens"].get<std::vector<int32_t>>();
    const auto want = c["generated_tokens"].get<std::vector<int32_t>>();
    const auto got = GreedyDecode(*model, prompt, static_cast<int>(want.size()), devices, split);
    EXPECT_EQ(got, want) << model_file << ": " << c["prompt"];
    matched += got == want;
  }
  std::printf("[ greedy ] %s%s%s: %d/%zu generations of 64 tokens identical\n", model_file.c_str(),
              devices.empty() ? "" : (" on " + devices).c_str(),
              split.empty() ? "" : (", " + split + " split").c_str(), matched, cases.size());
}

TEST(GoldenModelTest, GreedyStories260K) {
  ExpectGreedyMatches("stories260K.gguf", "stories260K/generate_greedy.json");
}
TEST(GoldenModelTest, GreedyStories260KF16) {
  ExpectGreedyMatches("stories260K-F16.gguf", "stories260K-F16/generate_greedy.json");
}
TEST(GoldenModelTest, GreedyTinyStoriesD64) {
  ExpectGreedyMatches("tinystories-d64.gguf",
                      "tinystories-d64/generate_greedy_top10_logprobs.json");
}
TEST(GoldenModelTest, GreedyTinyStoriesD64LayerSplit) {
  ExpectGreedyMatches("tinystories-d64.gguf", "tinystories-d64/generate_greedy_top10_logprobs.json",
                      "cpu:0,cpu:1,cpu:2", "layer");
}
TEST(GoldenModelTest, GreedyTinyStoriesD64TensorSplit) {
  ExpectGreedyMatches("tinystories-d64.gguf", "tinystories-d64/generate_greedy_top10_logprobs.json",
                      "cpu:0,cpu:1", "tensor");
}

// Teacher forcing: feed prompt + llama.cpp's greedy tokens; at every step
// compare our top-1 with llama.cpp's choice and our log-probabilities of
// llama.cpp's top-10 tokens with its values.
void ExpectTeacherForcingAgrees(const std::string& model_file, const std::string& golden,
                                TensorType kv_type, const std::string& devices = "") {
  auto model = LoadModel(model_file);
  ASSERT_NE(model, nullptr);
  const json cases = LoadJson(golden);
  ASSERT_GE(cases.size(), 5u);
  int steps = 0, agree = 0;
  double max_dlogprob = 0;
  for (const json& c : cases) {
    std::vector<int32_t> tokens = c["prompt_tokens"].get<std::vector<int32_t>>();
    const size_t n_prompt = tokens.size();
    for (const json& step : c["steps"]) tokens.push_back(step["token"].get<int32_t>());
    const std::vector<float> all = AllLogits(*model, kv_type, tokens, 1 << 30, devices);
    const int n_vocab = model->config().n_vocab;
    ASSERT_EQ(all.size(), tokens.size() * n_vocab);
    for (size_t i = 0; i < c["steps"].size(); ++i) {
      const json& step = c["steps"][i];
      const float* row = all.data() + (n_prompt - 1 + i) * n_vocab;
      ++steps;
      agree += Argmax(row, n_vocab) == step["token"].get<int>();
      const double lse = LogSumExp(row, n_vocab);
      const json& top = step.contains("top10") ? step["top10"] : step["top"];
      for (const json& t : top) {
        const double ours = row[t["token"].get<int>()] - lse;
        max_dlogprob = std::max(max_dlogprob, std::fabs(ours - t["logprob"].get<double>()));
      }
    }
  }
  const double rate = static_cast<double>(agree) / steps;
  std::printf(
      "[ teacher forcing ] %-30s%s top-1 agreement %d/%d = %.2f%%, max |dlogprob| (top-10) %.4g\n",
      model_file.c_str(), devices.empty() ? "" : (" on " + devices).c_str(), agree, steps,
      100 * rate, max_dlogprob);
  EXPECT_GE(rate, 0.99) << model_file;
}

TEST(GoldenModelTest, TeacherForcingStories260KQ8_0) {
  ExpectTeacherForcingAgrees("stories260K-Q8_0.gguf",
                             "stories260K-Q8_0/generate_greedy_top10_logprobs.json",
                             TensorType::kF16);
}
TEST(GoldenModelTest, TeacherForcingStories260KQ5_0) {
  ExpectTeacherForcingAgrees("stories260K-Q5_0.gguf",
                             "stories260K-Q5_0/generate_greedy_top10_logprobs.json",
                             TensorType::kF16);
}
TEST(GoldenModelTest, TeacherForcingStories260KQ4_0) {
  ExpectTeacherForcingAgrees("stories260K-Q4_0.gguf",
                             "stories260K-Q4_0/generate_greedy_top10_logprobs.json",
                             TensorType::kF16);
}
TEST(GoldenModelTest, TeacherForcingTinyStoriesQ4_K_M) {
  ExpectTeacherForcingAgrees("tinystories-d64-Q4_K_M.gguf",
                             "tinystories-d64-Q4_K_M/generate_greedy_top10_logprobs.json",
                             TensorType::kF16);
}
TEST(GoldenModelTest, TeacherForcingTinyStoriesQ6_K) {
  ExpectTeacherForcingAgrees("tinystories-d64-Q6_K.gguf",
                             "tinystories-d64-Q6_K/generate_greedy_top10_logprobs.json",
                             TensorType::kF16);
}
// The unquantized models too, as a baseline for the numbers above.
TEST(GoldenModelTest, TeacherForcingStories260KF32) {
  ExpectTeacherForcingAgrees("stories260K.gguf", "stories260K/generate_greedy_top10_logprobs.json",
                             TensorType::kF16);
}

// The same references on a GPU (bench/gpu_check.sh runs them there); they
// skip, saying so, on a machine without one. Q5_0 is not a CUDA weight type.
#define SKIP_WITHOUT_GPU()                                                                     \
  if (!ProbeGpuMemory(0).ok()) {                                                               \
    GTEST_SKIP() << "no GPU on this machine (" << ProbeGpuMemory(0).status().message() << ")"; \
  }

TEST(GoldenGpuTest, NextTokenLogitsMatchInF32) {
  SKIP_WITHOUT_GPU();
  ExpectNextTokenLogitsMatchInF32("cuda:0");
}
TEST(GoldenGpuTest, GreedyStories260K) {
  SKIP_WITHOUT_GPU();
  ExpectGreedyMatches("stories260K.gguf", "stories260K/generate_greedy.json", "cuda:0");
}
TEST(GoldenGpuTest, GreedyStories260KF16) {
  SKIP_WITHOUT_GPU();
  ExpectGreedyMatches("stories260K-F16.gguf", "stories260K-F16/generate_greedy.json", "cuda:0");
}
TEST(GoldenGpuTest, GreedyTinyStoriesD64) {
  SKIP_WITHOUT_GPU();
  ExpectGreedyMatches("tinystories-d64.gguf", "tinystories-d64/generate_greedy_top10_logprobs.json",
                      "cuda:0");
}
TEST(GoldenGpuTest, GreedyTinyStoriesD64LayerSplit) {
  SKIP_WITHOUT_GPU();
  ExpectGreedyMatches("tinystories-d64.gguf", "tinystories-d64/generate_greedy_top10_logprobs.json",
                      "cuda:0.0,cuda:0.1", "layer");
}
TEST(GoldenGpuTest, GreedyTinyStoriesD64TensorSplit) {
  SKIP_WITHOUT_GPU();
  ExpectGreedyMatches("tinystories-d64.gguf", "tinystories-d64/generate_greedy_top10_logprobs.json",
                      "cuda:0.0,cuda:0.1", "tensor");
}
TEST(GoldenGpuTest, TeacherForcingQuantizedAndF32) {
  SKIP_WITHOUT_GPU();
  ExpectTeacherForcingAgrees("stories260K-Q8_0.gguf",
                             "stories260K-Q8_0/generate_greedy_top10_logprobs.json",
                             TensorType::kF16, "cuda:0");
  ExpectTeacherForcingAgrees("stories260K-Q4_0.gguf",
                             "stories260K-Q4_0/generate_greedy_top10_logprobs.json",
                             TensorType::kF16, "cuda:0");
  ExpectTeacherForcingAgrees("tinystories-d64-Q4_K_M.gguf",
                             "tinystories-d64-Q4_K_M/generate_greedy_top10_logprobs.json",
                             TensorType::kF16, "cuda:0");
  ExpectTeacherForcingAgrees("tinystories-d64-Q6_K.gguf",
                             "tinystories-d64-Q6_K/generate_greedy_top10_logprobs.json",
                             TensorType::kF16, "cuda:0");
  ExpectTeacherForcingAgrees("stories260K.gguf", "stories260K/generate_greedy_top10_logprobs.json",
                             TensorType::kF16, "cuda:0");
}

TEST(GoldenModelTest, ChunkedPrefillEqualsOneShot) {
  auto model = LoadModel("tinystories-d64.gguf");
  ASSERT_NE(model, nullptr);
  std::vector<int32_t> tokens = {1};
  for (int i = 0; i < 70; ++i) tokens.push_back(300 + (i * 7) % 150);
  const auto one = AllLogits(*model, TensorType::kF16, tokens);
  const auto chunked = AllLogits(*model, TensorType::kF16, tokens, 13);
  ASSERT_EQ(one.size(), chunked.size());
  // Each position's logits are computed by the same kernels on the same K/V
  // bytes whatever the chunking: bit-identical.
  EXPECT_EQ(one, chunked);
}

}  // namespace
}  // namespace kvmesh
