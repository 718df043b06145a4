// K-mean calibration: exact means and energy share from pages a fake
// executor serves, and the layouts it refuses.
#include "worker/eval/k_calibration.h"

#include <gtest/gtest.h>

#include <cstring>

namespace kvmesh {
namespace {

// 1 layer, 1 KV head of 2 channels, blocks of 2 tokens, f32.
KvLayout TinyLayout() {
  KvLayout layout;
  layout.n_layer = 1;
  layout.n_head_kv = 1;
  layout.head_dim = 2;
  layout.block_size = 2;
  layout.k_type = TensorType::kF32;
  layout.v_type = TensorType::kF32;
  return layout;
}

// Serves fixed block bytes; Forward is never called.
class FakeExecutor : public Executor {
 public:
  FakeExecutor(KvLayout layout, std::vector<std::vector<float>> k_rows)
      : layout_(std::move(layout)), k_rows_(std::move(k_rows)) {}
  const KvLayout& kv_layout() const override { return layout_; }
  int64_t num_blocks() const override { return 8; }
  Status Forward(const ForwardBatch&, ForwardOutput*) override {
    return UnimplementedError("fake");
  }
  // Block b holds K rows 2b and 2b+1 (V zero).
  Status ReadBlock(int32_t block, std::vector<uint8_t>* out) const override {
    out->assign(layout_.bytes_per_block(), 0);
    for (int slot = 0; slot < 2; ++slot) {
      const size_t row = static_cast<size_t>(block) * 2 + slot;
      if (row < k_rows_.size()) std::memcpy(out->data() + slot * 8, k_rows_[row].data(), 8);
    }
    return Status::Ok();
  }
  Status WriteBlock(int32_t, std::span<const uint8_t>) override {
    return UnimplementedError("fake");
  }

 private:
  KvLayout layout_;
  std::vector<std::vector<float>> k_rows_;
};

TEST(KMeanAccumulatorTest, MeansAndEnergyShare) {
  auto acc = KMeanAccumulator::Create(TinyLayout());
  ASSERT_TRUE(acc.ok()) << acc.status().ToString();
  // Positions 0..2 on blocks 3, 1: rows (1, 4), (3, -4), (2, 0).
  FakeExecutor exec(TinyLayout(),
                    {{0, 0}, {0, 0}, {2, 0}, {0, 0}, {0, 0}, {0, 0}, {1, 4}, {3, -4}});
  const std::vector<int32_t> table = {3, 1};
  ASSERT_TRUE(acc->AddSequence(exec, table, 3).ok());
  EXPECT_EQ(acc->n_tokens(), 3u);
  EXPECT_EQ(acc->Means(), (std::vector<float>{2.0f, 0.0f}));
  // |mean|² = 4; mean |k|² = (17 + 25 + 4) / 3.
  EXPECT_NEAR(acc->MeanEnergyShare()[0], 4.0 / (46.0 / 3.0), 1e-12);
  const auto bias = acc->Finish("id", "tiny");
  EXPECT_EQ(bias->model_identity(), "id");
  EXPECT_EQ(bias->n_tokens(), 3u);
  EXPECT_EQ(bias->Row(0, 0)[0], 2.0f);
}

TEST(KMeanAccumulatorTest, RefusesTransformedOrQuantizedCaches) {
  KvLayout layout = TinyLayout();
  layout.head_dim = 32;
  layout.k_type = TensorType::kQ8_0;
  EXPECT_EQ(KMeanAccumulator::Create(layout).status().message(),
            "K calibration reads K back from the cache, which must be f32 or f16 (got "
            "k=q8_0,v=f32)");
  layout.k_type = TensorType::kF16;
  layout.k_rotated = true;
  EXPECT_EQ(KMeanAccumulator::Create(layout).status().message(),
            "K calibration needs the cache to hold K as computed; turn off centering and rotation");
}

TEST(KMeanAccumulatorTest, ExecutorMustUseTheSameLayout) {
  auto acc = KMeanAccumulator::Create(TinyLayout());
  KvLayout other = TinyLayout();
  other.block_size = 4;
  FakeExecutor exec(other, {});
  const std::vector<int32_t> table = {0};
  EXPECT_EQ(acc->AddSequence(exec, table, 1).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvmesh
