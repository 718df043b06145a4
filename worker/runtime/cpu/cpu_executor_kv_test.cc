// The CPU executor with quantized and transformed KV pages, on the real
// tinystories-d64 model (head_dim 64):
//  - pages are written once: a second sequence that reuses a first one's
//    blocks leaves their bytes unchanged, and gets the same logits as a cold
//    run;
//  - centering and rotation change no attention result (f32 cache);
//  - layouts the model cannot use fail at Create with a clear message.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "common/sha256.h"
#include "worker/kv/kv_bias.h"
#include "worker/model/model.h"
#include "worker/runtime/cpu/cpu_attention.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kModels = std::string(KVMESH_SHARED_DIR) + "/models/";

std::unique_ptr<Model> LoadModel(const std::string& file) {
  auto model = Model::Load(kModels + file);
  if (!model.ok()) {
    ADD_FAILURE() << model.status().ToString() << " (needs ../shared/models)";
    return nullptr;
  }
  return std::move(model).value();
}

KvLayout LayoutFor(const Model& model, TensorType k, TensorType v) {
  const ModelConfig& c = model.config();
  KvLayout layout;
  layout.n_layer = c.n_layer;
  layout.n_head_kv = c.n_head_kv;
  layout.head_dim = c.head_dim;
  layout.k_type = k;
  layout.v_type = v;
  return layout;
}

// A bias with a large offset in every channel, so centering matters.
std::shared_ptr<const KvBias> SyntheticBias(const Model& model) {
  const ModelConfig& c = model.config();
  std::vector<float> mean(static_cast<size_t>(c.n_layer) * c.n_head_kv * c.head_dim);
  for (size_t i = 0; i < mean.size(); ++i) mean[i] = 0.5f * std::sin(0.37f * i) + 0.25f;
  return std::make_shared<const KvBias>(model.identity(), c.name, c.n_layer, c.n_head_kv,
                                        c.head_dim, 1, std::move(mean));
}

std::vector<int32_t> Tokens(int n, int salt) {
  std::vector<int32_t> t(n);
  t[0] = 1;  // BOS
  for (int i = 1; i < n; ++i) t[i] = (i * 37 + salt) % 500 + 5;
  return t;
}

// Runs tokens[start, start + n) of one sequence and returns its logits rows.
std::vector<float> RunSequence(ModelExecutor& exec, const std::vector<int32_t>& tokens, int start,
                               int n, const std::vector<int32_t>& table, LogitsMode mode) {
  ForwardBatch batch;
  batch.tokens.assign(tokens.begin() + start, tokens.begin() + start + n);
  batch.sequences.push_back({0, n, start, table, mode});
  ForwardOutput out;
  Status s = exec.Forward(batch, &out);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return out.logits;
}

std::string BlockHash(const ModelExecutor& exec, int32_t block) {
  std::vector<uint8_t> bytes;
  EXPECT_TRUE(exec.ReadBlock(block, &bytes).ok());
  return Sha256Hex(bytes);
}

void ExpectPrefixReuseReadsTheSameBytes(const Model& model, TensorType type) {
  KvLayout layout = LayoutFor(model, type, type);
  layout.k_bias = SyntheticBias(model);
  layout.k_rotated = true;
  layout.v_rotated = true;
  auto exec = ModelExecutor::CreateOnCpu(model, layout, 16, 2);
  ASSERT_TRUE(exec.ok()) << exec.status().ToString();

  // Sequence A: 40 tokens on blocks 5, 2, 9 (two full blocks and a partial).
  const std::vector<int32_t> a = Tokens(40, 11);
  RunSequence(**exec, a, 0, 40, {5, 2, 9}, LogitsMode::kLast);
  const std::string block5 = BlockHash(**exec, 5);
  const std::string block2 = BlockHash(**exec, 2);
  const std::string block9 = BlockHash(**exec, 9);

  // Sequence B shares A's first 32 tokens (blocks 5 and 2) and computes only
  // its own 20 tokens, on blocks 7 and 1.
  std::vector<int32_t> b(a.begin(), a.begin() + 32);
  const std::vector<int32_t> b_tail = Tokens(21, 3);
  b.insert(b.end(), b_tail.begin() + 1, b_tail.end());
  ASSERT_EQ(b.size(), 52u);
  const std::vector<float> warm = RunSequence(**exec, b, 32, 20, {5, 2, 7, 1}, LogitsMode::kLast);
  EXPECT_EQ(BlockHash(**exec, 5), block5);
  EXPECT_EQ(BlockHash(**exec, 2), block2);
  EXPECT_EQ(BlockHash(**exec, 9), block9);  // A's private block: untouched too

  // A cold run of B on fresh blocks gives the same next-token logits, so B
  // did read A's pages.
  const std::vector<float> cold =
      RunSequence(**exec, b, 0, 52, {10, 11, 12, 13}, LogitsMode::kLast);
  ASSERT_EQ(warm.size(), cold.size());
  const auto argmax = [](const std::vector<float>& v) {
    return std::max_element(v.begin(), v.end()) - v.begin();
  };
  EXPECT_EQ(argmax(warm), argmax(cold));
  for (size_t i = 0; i < warm.size(); ++i) ASSERT_NEAR(warm[i], cold[i], 1e-4) << i;
  // And the cold run quantized the shared positions to the same bytes.
  EXPECT_EQ(BlockHash(**exec, 10), block5);
  EXPECT_EQ(BlockHash(**exec, 11), block2);

  // Control: the hash does see a write. Recomputing position 31 with another
  // token changes block 2.
  std::vector<int32_t> c = b;
  c[31] = c[31] == 7 ? 8 : 7;
  RunSequence(**exec, c, 31, 1, {5, 2}, LogitsMode::kLast);
  EXPECT_NE(BlockHash(**exec, 2), block2);
  EXPECT_EQ(BlockHash(**exec, 5), block5);
}

// For the 4-bit and the 3.5-bit page types, with every transform.
TEST(CpuExecutorKvTest, PrefixReuseReadsTheSameBytes) {
  auto model = LoadModel("tinystories-d64.gguf");
  ASSERT_NE(model, nullptr);
  for (TensorType type : {TensorType::kQ4_0, TensorType::kQ3_NL}) {
    SCOPED_TRACE(TensorTypeName(type));
    ExpectPrefixReuseReadsTheSameBytes(*model, type);
  }
}

// In exact arithmetic centering and rotation change no attention result; in
// floats, with an f32 cache, the logits agree to rounding.
TEST(CpuExecutorKvTest, CenteringAndRotationPreserveLogits) {
  auto model = LoadModel("tinystories-d64.gguf");
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> tokens = Tokens(48, 5);
  std::vector<int32_t> table = {0, 1, 2};
  KvLayout plain = LayoutFor(*model, TensorType::kF32, TensorType::kF32);
  auto base_exec = ModelExecutor::CreateOnCpu(*model, plain, 3, 2);
  ASSERT_TRUE(base_exec.ok());
  const std::vector<float> base = RunSequence(**base_exec, tokens, 0, 48, table, LogitsMode::kAll);
  for (int variant = 1; variant < 8; ++variant) {
    KvLayout layout = plain;
    if (variant & 1) layout.k_bias = SyntheticBias(*model);
    if (variant & 2) layout.k_rotated = true;
    if (variant & 4) layout.v_rotated = true;
    auto exec = ModelExecutor::CreateOnCpu(*model, layout, 3, 2);
    ASSERT_TRUE(exec.ok()) << exec.status().ToString();
    const std::vector<float> got = RunSequence(**exec, tokens, 0, 48, table, LogitsMode::kAll);
    ASSERT_EQ(got.size(), base.size());
    double max_diff = 0.0;
    for (size_t i = 0; i < got.size(); ++i) {
      max_diff = std::max(max_diff, static_cast<double>(std::fabs(got[i] - base[i])));
    }
    EXPECT_LT(max_diff, 2e-4) << layout.TypeName();
  }
}

// A context longer than an attention partition: a prefill (many work items,
// each doing its partitions in turn) and a short chunk then decode steps (too
// few items for the threads, so each partition is an item of its own, with
// tiles of several tokens in the chunk) give the same logits bit for bit, on
// 1 and 2 threads.
TEST(CpuExecutorKvTest, LongContextLogitsDoNotDependOnHowPartitionsAreScheduled) {
  auto model = LoadModel("tinystories-d64.gguf");
  ASSERT_NE(model, nullptr);
  ASSERT_GT(model->config().n_head_kv, 1);  // several KV heads share the split buffers
  constexpr int kPrompt = 2 * kAttentionPartition + 60;
  constexpr int kChunk = 5;   // tokens after the prompt in one step
  constexpr int kDecode = 2;  // then one per step
  constexpr int kTail = kChunk + kDecode;
  const std::vector<int32_t> tokens = Tokens(kPrompt + kTail, 9);
  std::vector<int32_t> table((kPrompt + kTail) / 16 + 1);
  std::iota(table.begin(), table.end(), 0);
  const KvLayout layout = LayoutFor(*model, TensorType::kF16, TensorType::kF16);
  std::vector<std::vector<float>> runs;
  for (int threads : {1, 2}) {
    auto exec = ModelExecutor::CreateOnCpu(*model, layout, static_cast<int>(table.size()), threads);
    ASSERT_TRUE(exec.ok()) << exec.status().ToString();
    // The whole prompt and the tail in one prefill...
    std::vector<float> all =
        RunSequence(**exec, tokens, 0, kPrompt + kTail, table, LogitsMode::kAll);
    const size_t n_vocab = all.size() / (kPrompt + kTail);
    std::vector<float> tail(all.end() - kTail * n_vocab, all.end());
    // ...against the prompt, then the chunk, then one token per step.
    RunSequence(**exec, tokens, 0, kPrompt, table, LogitsMode::kLast);
    std::vector<float> stepped =
        RunSequence(**exec, tokens, kPrompt, kChunk, table, LogitsMode::kAll);
    for (int i = 0; i < kDecode; ++i) {
      const std::vector<float> step =
          RunSequence(**exec, tokens, kPrompt + kChunk + i, 1, table, LogitsMode::kLast);
      stepped.insert(stepped.end(), step.begin(), step.end());
    }
    ASSERT_EQ(stepped.size(), tail.size());
    for (size_t i = 0; i < tail.size(); ++i) {
      ASSERT_EQ(stepped[i], tail[i]) << "threads " << threads << " token " << i / n_vocab;
    }
    runs.push_back(std::move(tail));
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(CpuExecutorKvTest, HeadSizeTooSmallForQuantBlocks) {
  auto model = LoadModel("stories260K.gguf");  // head_dim 8
  ASSERT_NE(model, nullptr);
  auto exec = ModelExecutor::CreateOnCpu(
      *model, LayoutFor(*model, TensorType::kQ4_0, TensorType::kF16), 4, 1);
  EXPECT_EQ(exec.status().message(),
            "K cache type q4_0 stores blocks of 32 values, which does not divide the head size 8; "
            "use f16, bf16 or f32 for this model");
}

}  // namespace
}  // namespace kvmesh
