#include "worker/runtime/parallel_plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "worker/model/model.h"

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

const std::string kModels = std::string(KVMESH_SHARED_DIR) + "/models/";

std::unique_ptr<Model> Load(const std::string& file) {
  auto model = Model::Load(kModels + file);
  EXPECT_TRUE(model.ok()) << model.status().ToString() << " (needs ../shared/models)";
  return model.ok() ? std::move(model).value() : nullptr;
}

StatusOr<ParallelPlan> Plan(const Model& m, const std::string& devices, const std::string& split,
                            const std::string& layer_split = "") {
  ASSIGN_OR_RETURN(PlanOptions o, PlanOptions::Parse(devices, split, layer_split, 1));
  return ParallelPlan::Make(m.config(), m.weights(), o);
}

TEST(ParallelPlanTest, OneDeviceHoldsEverything) {
  auto m = Load("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  auto plan = Plan(*m, "", "");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->split, SplitKind::kNone);
  ASSERT_EQ(plan->num_devices(), 1);
  const DeviceShard& d = plan->devices[0];
  EXPECT_EQ(d.device.Name(), "cpu:0");
  EXPECT_EQ(d.layer_begin, 0);
  EXPECT_EQ(d.layer_end, 5);
  EXPECT_EQ(d.num_kv_heads(), 4);
  EXPECT_EQ(d.num_q_heads(), 8);
  EXPECT_EQ(d.num_ff(), 172);
  EXPECT_EQ(d.vocab_end, 512);
  EXPECT_TRUE(d.embeds);
  uint64_t bytes = m->weights().token_embd.num_bytes() + m->weights().output.num_bytes();
  for (const LayerWeights& l : m->weights().layers) bytes += LayerWeightBytes(l);
  EXPECT_EQ(d.weight_bytes, bytes);
}

TEST(ParallelPlanTest, LayerSplitBalancesBytesAndKeepsLayersContiguous) {
  auto m = Load("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  auto plan = Plan(*m, "cpu:0,cpu:1", "layer");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->split, SplitKind::kLayer);
  // Five equal layers, the (tied, 32 KiB) output head on the last device:
  // 3 + 2 puts less on the device that also computes logits.
  EXPECT_EQ(plan->devices[0].layer_end, 3);
  EXPECT_EQ(plan->devices[1].layer_begin, 3);
  EXPECT_EQ(plan->devices[1].layer_end, 5);
  EXPECT_TRUE(plan->devices[0].embeds);
  EXPECT_FALSE(plan->devices[1].embeds);
  EXPECT_FALSE(plan->devices[0].computes_logits());
  EXPECT_TRUE(plan->devices[1].computes_logits());
  EXPECT_EQ(plan->DeviceOfLayer(4), 1);
  EXPECT_EQ(plan->ToString().substr(0, 24), "layer split over cpu:0 (");

  auto three = Plan(*m, "cpu:0,cpu:1,cpu:2", "layer");
  ASSERT_TRUE(three.ok());
  int layers = 0;
  for (const DeviceShard& d : three->devices) {
    EXPECT_EQ(d.layer_begin, layers);
    EXPECT_GE(d.num_layers(), 1);
    layers = d.layer_end;
  }
  EXPECT_EQ(layers, 5);
}

TEST(ParallelPlanTest, ExplicitLayerSplit) {
  auto m = Load("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  auto plan = Plan(*m, "cpu:0,cpu:1", "layer", "1,4");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->devices[0].layer_end, 1);
  EXPECT_EQ(plan->devices[1].num_layers(), 4);
  EXPECT_THAT(Plan(*m, "cpu:0,cpu:1", "layer", "2,2").status().message(),
              HasSubstr("adds up to 4 layers; the model has 5"));
  EXPECT_THAT(Plan(*m, "cpu:0,cpu:1", "layer", "5").status().message(),
              HasSubstr("1 layer counts for 2 devices"));
  EXPECT_THAT(Plan(*m, "cpu:0,cpu:1", "layer", "2,x").status().message(),
              HasSubstr("'x' is not a positive layer count"));
  EXPECT_THAT(Plan(*m, "cpu:0,cpu:1", "tensor", "2,3").status().message(),
              HasSubstr("--layer-split applies to --split layer"));
  EXPECT_THAT(Plan(*m, "cpu:0,cpu:1,cpu:2,cpu:3,cpu:4,cpu:5", "layer").status().message(),
              HasSubstr("the model has 5 layers, fewer than the devices"));
}

TEST(ParallelPlanTest, TensorSplitTakesWholeKvHeadsWithTheirQueryHeads) {
  auto m = Load("stories260K.gguf");  // 8 query heads, 4 KV heads, n_ff 172, vocab 512
  ASSERT_NE(m, nullptr);
  auto plan = Plan(*m, "cpu:0,cpu:1", "tensor");
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->split, SplitKind::kTensor);
  const DeviceShard& a = plan->devices[0];
  const DeviceShard& b = plan->devices[1];
  EXPECT_EQ(a.kv_head_begin, 0);
  EXPECT_EQ(a.kv_head_end, 2);
  EXPECT_EQ(a.q_head_end, 4);
  EXPECT_EQ(b.kv_head_begin, 2);
  EXPECT_EQ(b.q_head_begin, 4);
  EXPECT_EQ(b.q_head_end, 8);
  EXPECT_EQ(a.ff_end, 86);
  EXPECT_EQ(b.ff_begin, 86);
  EXPECT_EQ(b.ff_end, 172);
  EXPECT_EQ(a.vocab_end, 256);  // on a 16-row panel
  EXPECT_EQ(b.vocab_begin, 256);
  EXPECT_EQ(b.vocab_end, 512);
  EXPECT_TRUE(a.embeds && b.embeds);
  EXPECT_EQ(a.num_layers(), 5);
  EXPECT_EQ(a.ShardLayout(KvLayout{5, 4, 8}).n_head_kv, 2);

  auto four = Plan(*m, "cpu:0,cpu:1,cpu:2,cpu:3", "tensor");
  ASSERT_TRUE(four.ok()) << four.status().ToString();
  EXPECT_EQ(four->devices[3].kv_head_begin, 3);
  EXPECT_EQ(four->devices[3].q_head_begin, 6);
}

TEST(ParallelPlanTest, TensorSplitErrorsNameTheCounts) {
  auto m = Load("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  const Status three = Plan(*m, "cpu:0,cpu:1,cpu:2", "tensor").status();
  EXPECT_THAT(three.message(), HasSubstr("tensor split over 3 devices: the model's 4 KV heads do "
                                         "not divide by 3"));
  // Q4_K cuts only at 256 columns: 256 query columns do not halve.
  auto q4k = Load("tinystories-d64-Q4_K_M.gguf");
  ASSERT_NE(q4k, nullptr);
  EXPECT_THAT(Plan(*q4k, "cpu:0,cpu:1", "tensor").status().message(),
              HasSubstr("blk.0.attn_output.weight (Q4_K, blocks of 256) cannot be cut at column "
                        "128"));
}

TEST(ParallelPlanTest, SeveralDevicesNeedASplit) {
  auto m = Load("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  EXPECT_THAT(Plan(*m, "cpu:0,cpu:1", "none").status().message(),
              HasSubstr("several devices need --split layer or --split tensor"));
  EXPECT_THAT(Plan(*m, "cpu:0", "sideways").status().message(),
              HasSubstr("--split 'sideways': expected layer or tensor"));
}

TEST(ParallelPlanTest, PinnedDevicesGetOneThreadPerCore) {
  auto m = Load("stories260K.gguf");
  ASSERT_NE(m, nullptr);
  auto plan = Plan(*m, "cpu:0@0-2,cpu:1@3", "layer");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->devices[0].threads, 3);
  EXPECT_EQ(plan->devices[1].threads, 1);
}

}  // namespace
}  // namespace kvmesh
