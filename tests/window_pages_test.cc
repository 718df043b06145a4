// Window pages (KvLayout::window_blocks): the sliding-window layers of
// gemma2 and gemma3 keep pages of their own, and KvCacheManager releases
// those the window has passed. A sequence much longer than the window runs
// with a window pool of a few pages, which new positions keep reusing, and
// every logit is bit-identical to the same sequence on whole blocks: no
// position reads a released page. On one device and split by layer (a
// device of windowed layers only next to one with a global layer), and for
// a llama file windowed on every layer (tiny-mistral), whose blocks then
// have no pages but window pages.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "worker/kv/kv_cache_manager.h"
#include "worker/model/model.h"
#include "worker/model/synthetic_model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

const std::string kShared = KVMESH_SHARED_DIR;

struct Case {
  std::string shape;
  std::string split;  // "": one device; "layer": over 2 devices
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.shape << (c.split.empty() ? " on one device" : " split " + c.split);
}

class WindowPagesTest : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    SynthesizeOptions o;
    o.shape = *FindSyntheticShape(GetParam().shape);
    o.shape.n_layer = std::max(2, o.shape.sliding_window_pattern);  // both kinds of layer
    o.shape.default_chat_template.clear();
    o.mix = SyntheticMix::kF16;
    o.vocab_path = kShared + "/vocab/ggml-vocab-llama-spm.gguf";
    path_ = ::testing::TempDir() + "/window_pages_" + GetParam().shape + "_" +
            std::to_string(::getpid()) + ".gguf";
    o.output_path = path_;
    ThreadPool pool(2);
    auto report = SynthesizeModel(o, pool);
    ASSERT_TRUE(report.ok()) << report.status().ToString();
    auto model = Model::Load(path_);
    ASSERT_TRUE(model.ok()) << model.status().ToString();
    model_ = std::move(*model);
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::unique_ptr<ModelExecutor> Executor(int64_t window_blocks, int64_t num_blocks) {
    const ModelConfig& c = model_->config();
    KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
    layout.window_blocks = window_blocks;
    const std::string& split = GetParam().split;
    auto options =
        PlanOptions::Parse(split.empty() ? "" : "cpu:0,cpu:1", split, "", split.empty() ? 2 : 1);
    EXPECT_TRUE(options.ok()) << options.status().ToString();
    auto exec = ModelExecutor::Create(*model_, layout, *options, num_blocks);
    EXPECT_TRUE(exec.ok()) << exec.status().ToString();
    return exec.ok() ? std::move(*exec) : nullptr;
  }

  std::string path_;
  std::unique_ptr<Model> model_;
};

TEST_P(WindowPagesTest, LogitsMatchWholeBlocksWhileReleasedPagesAreReused) {
  const ModelConfig& c = model_->config();
  ASSERT_EQ(c.MaxWindow(), 32);
  constexpr int kWindowPages = 6;  // the window's 2 blocks, the current one, a chunk's 3
  auto whole = Executor(0, 16);
  auto windowed = Executor(kWindowPages, 16);
  ASSERT_TRUE(whole && windowed);
  KvCacheManager kv(16, 16);
  kv.EnableWindowPages(kWindowPages, c.MaxWindow());
  SequenceBlocks seq;
  seq.root = RootHash("window-pages-test");
  const std::vector<int32_t> table = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};

  std::vector<int32_t> tokens = {1};
  const std::vector<int32_t> words = {450, 4996, 17354, 1701, 432, 29892, 338, 263, 1243};
  while (tokens.size() < 150) tokens.push_back(words[tokens.size() % words.size()]);
  int32_t done = 0;
  int steps = 0;
  while (tokens.size() < 200) {
    // Chunks of 40 through the prompt, then one token a step.
    const int32_t n = std::min<int32_t>(40, static_cast<int32_t>(tokens.size()) - done);
    ASSERT_TRUE(kv.AllocateSlots(&seq, done + n)) << "at " << done;
    ForwardBatch batch;
    batch.tokens.assign(tokens.begin() + done, tokens.begin() + done + n);
    batch.sequences.push_back({0, n, done, table, LogitsMode::kAll});
    ForwardOutput want, got;
    ASSERT_TRUE(whole->Forward(batch, &want).ok());
    batch.sequences[0].block_table = seq.table;
    batch.sequences[0].window_table = seq.window_table;
    const Status status = windowed->Forward(batch, &got);
    ASSERT_TRUE(status.ok()) << status.ToString();
    ASSERT_EQ(want.logits.size(), got.logits.size());
    ASSERT_TRUE(want.logits == got.logits) << "positions " << done << ".." << done + n - 1;
    done += n;
    kv.CommitComputed(&seq, tokens, done);
    kv.ReleaseOutsideWindow(&seq, done);
    EXPECT_LE(kv.window_pool()->num_used(), kv.WindowSpan() + 1) << "after " << done;
    if (done == static_cast<int32_t>(tokens.size())) {
      const float* row = want.Row(n - 1);
      tokens.push_back(static_cast<int32_t>(std::max_element(row, row + want.n_vocab) - row));
    }
    ++steps;
  }
  // 200 positions took 13 blocks, on 6 window pages.
  EXPECT_EQ(seq.table.size(), 13u);
  EXPECT_EQ(seq.window_released, (200 - 31) / 16);
  kv.Release(&seq);
  EXPECT_EQ(kv.window_pool()->num_free(), kWindowPages);
}

TEST_P(WindowPagesTest, AReleasedPageInsideTheWindowIsRejected) {
  auto windowed = Executor(4, 16);
  ASSERT_TRUE(windowed);
  ForwardBatch batch;
  batch.tokens = {1, 450};
  const std::vector<int32_t> table = {0, 1, 2, 3};
  const std::vector<int32_t> window_table = {-1, -1, 0, 1};
  // Position 40 attends from position 9 in block 0: its page is needed.
  batch.sequences.push_back({0, 2, 40, table, LogitsMode::kLast, window_table});
  ForwardOutput out;
  const Status status = windowed->Forward(batch, &out);
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("window block id -1 at block 0"), std::string::npos)
      << status.ToString();
  // Whole blocks cannot be read or written: their layers' pages have two ids.
  std::vector<uint8_t> bytes;
  EXPECT_EQ(windowed->ReadBlock(0, &bytes).code(), StatusCode::kFailedPrecondition);
}

// What the memory of whole blocks buys beside window pages: half the layers
// windowed (gemma2) frees half a block per window page; every layer
// windowed (tiny-mistral) leaves ids without pages, as long as the window
// pages fit where whole blocks did.
TEST_P(WindowPagesTest, BlocksBesideWindowPagesCountsEachDevicesLayers) {
  const ModelConfig& c = model_->config();
  const std::string& split = GetParam().split;
  auto options =
      PlanOptions::Parse(split.empty() ? "" : "cpu:0,cpu:1", split, "", split.empty() ? 2 : 1);
  ASSERT_TRUE(options.ok());
  auto plan = ParallelPlan::Make(c, model_->weights(), *options);
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  const std::string& shape = GetParam().shape;
  if (shape == "tiny-gemma2") {  // layers 0 (windowed) and 1
    EXPECT_EQ(BlocksBesideWindowPages(100, 50, *plan, c), 150);
    EXPECT_EQ(BlocksBesideWindowPages(100, 100, *plan, c), 100);
  } else if (shape == "tiny-mistral") {  // both layers windowed
    EXPECT_EQ(BlocksBesideWindowPages(100, 50, *plan, c), 800);
    EXPECT_EQ(BlocksBesideWindowPages(100, 101, *plan, c), 0);
  } else {  // tiny-gemma3 split by layer: layers 0 and 1 windowed, 2 global
    ASSERT_EQ(plan->devices.size(), 2u);
    std::vector<bool> all;
    for (const DeviceShard& d : plan->devices) {
      const std::vector<bool> w = d.WindowedLayers(c);
      all.insert(all.end(), w.begin(), w.end());
    }
    EXPECT_EQ(all, (std::vector<bool>{true, true, false}));
    // A device of windowed layers only gains nothing; the other frees what
    // its windowed layer (if any) no longer holds.
    const bool first_alone = plan->devices[0].layer_end == 1;
    EXPECT_EQ(BlocksBesideWindowPages(100, 50, *plan, c), first_alone ? 150 : 100);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, WindowPagesTest,
                         ::testing::Values(Case{"tiny-gemma2", ""}, Case{"tiny-gemma3", "layer"},
                                           Case{"tiny-mistral", ""}),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           std::string name =
                               info.param.shape + "_" +
                               (info.param.split.empty() ? "one_device" : info.param.split);
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

}  // namespace
}  // namespace kvmesh
