// KvLayout: bytes per type (the figures docs/kv-cache.md quotes) and the
// errors Validate() gives for layouts a model cannot use.
#include "worker/kv/kv_layout.h"

#include <gtest/gtest.h>

#include "worker/kv/kv_bias.h"

namespace kvmesh {
namespace {

// tinystories-d64: 4 layers, 2 KV heads of 64.
KvLayout D64(TensorType k, TensorType v) {
  KvLayout layout;
  layout.n_layer = 4;
  layout.n_head_kv = 2;
  layout.head_dim = 64;
  layout.k_type = k;
  layout.v_type = v;
  return layout;
}

TEST(KvLayoutTest, BytesPerTokenPerType) {
  // One head of 64 values: f32 256 B, f16/bf16 128 B, q8_0 2 x 34 B, q4_0 2 x 18 B.
  EXPECT_EQ(D64(TensorType::kF32, TensorType::kF32).k_row_bytes(), 256u);
  EXPECT_EQ(D64(TensorType::kF16, TensorType::kF16).k_row_bytes(), 128u);
  EXPECT_EQ(D64(TensorType::kBF16, TensorType::kBF16).k_row_bytes(), 128u);
  EXPECT_EQ(D64(TensorType::kQ8_0, TensorType::kQ8_0).k_row_bytes(), 68u);
  EXPECT_EQ(D64(TensorType::kQ4_0, TensorType::kQ4_0).k_row_bytes(), 36u);
  // K + V, 2 heads, 4 layers.
  EXPECT_EQ(D64(TensorType::kF16, TensorType::kF16).bytes_per_token(), 2048u);
  EXPECT_EQ(D64(TensorType::kQ8_0, TensorType::kQ8_0).bytes_per_token(), 1088u);  // 53.1%
  EXPECT_EQ(D64(TensorType::kQ4_0, TensorType::kQ4_0).bytes_per_token(), 576u);   // 28.1%
  EXPECT_EQ(D64(TensorType::kQ4_0, TensorType::kF16).bytes_per_token(), 1312u);
  EXPECT_EQ(D64(TensorType::kQ4_0, TensorType::kQ4_0).bytes_per_block(), 576u * 16);
}

TEST(KvLayoutTest, QuantBlockMustDivideHeadSize) {
  KvLayout layout = D64(TensorType::kQ4_0, TensorType::kF16);
  layout.head_dim = 8;  // stories260K
  Status s = layout.Validate();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "K cache type q4_0 stores blocks of 32 values, which does not divide the head size 8; "
            "use f16, bf16 or f32 for this model");
  layout.k_type = TensorType::kF16;
  layout.v_type = TensorType::kQ8_0;
  EXPECT_EQ(layout.Validate().message(),
            "V cache type q8_0 stores blocks of 32 values, which does not divide the head size 8; "
            "use f16, bf16 or f32 for this model");
  layout.v_type = TensorType::kBF16;
  EXPECT_TRUE(layout.Validate().ok());
}

TEST(KvLayoutTest, OnlyKvStorageTypes) {
  KvLayout layout = D64(TensorType::kQ4_K, TensorType::kF16);
  EXPECT_EQ(layout.Validate().message(),
            "K cache type q4_k is not a KV storage type; use f32, f16, bf16, q8_0, q4_0 or q3_nl");
  EXPECT_TRUE(IsKvStorageType(TensorType::kBF16));
  EXPECT_FALSE(IsKvStorageType(TensorType::kQ5_0));
}

TEST(KvLayoutTest, RotationNeedsPowerOfTwoHeads) {
  KvLayout layout = D64(TensorType::kQ4_0, TensorType::kF16);
  layout.k_rotated = true;
  EXPECT_TRUE(layout.Validate().ok());
  layout.head_dim = 96;
  EXPECT_EQ(layout.Validate().message(),
            "the Hadamard rotation of K needs a power-of-two head size, but this model's head "
            "size is 96; run without --kv-rotate");
  layout.k_rotated = false;
  layout.v_rotated = true;
  EXPECT_EQ(layout.Validate().message(),
            "the Hadamard rotation of V needs a power-of-two head size, but this model's head "
            "size is 96; run without --kv-rotate-v");
}

TEST(KvLayoutTest, BiasMustHaveLayoutShape) {
  KvLayout layout = D64(TensorType::kQ4_0, TensorType::kQ4_0);
  layout.k_bias =
      std::make_shared<const KvBias>("id", "m", 4, 2, 32, 10, std::vector<float>(4 * 2 * 32, 0.0f));
  EXPECT_EQ(layout.Validate().message(),
            "the K bias table has 4 layers x 2 KV heads x 32 channels but the KV layout has 4 x 2 "
            "x 64");
  layout.k_bias =
      std::make_shared<const KvBias>("id", "m", 4, 2, 64, 10, std::vector<float>(4 * 2 * 64, 0.0f));
  EXPECT_TRUE(layout.Validate().ok());
}

TEST(KvLayoutTest, TypeNames) {
  EXPECT_EQ(D64(TensorType::kQ8_0, TensorType::kQ8_0).TypeName(), "q8_0");
  EXPECT_EQ(D64(TensorType::kQ4_0, TensorType::kF16).TypeName(), "k=q4_0,v=f16");
  KvLayout layout = D64(TensorType::kQ4_0, TensorType::kQ4_0);
  layout.k_rotated = true;
  EXPECT_EQ(layout.TypeName(), "k=q4_0+rotate,v=q4_0");
  layout.v_rotated = true;
  EXPECT_EQ(layout.TypeName(), "q4_0+rotate");
  layout.k_bias =
      std::make_shared<const KvBias>("id", "m", 4, 2, 64, 10, std::vector<float>(4 * 2 * 64, 0.0f));
  EXPECT_EQ(layout.TypeName(), "k=q4_0+center+rotate,v=q4_0+rotate");
  EXPECT_EQ(layout.ToString(),
            "layers=4 kv_heads=2 head_dim=64 block=16 type=k=q4_0+center+rotate,v=q4_0+rotate");
}

}  // namespace
}  // namespace kvmesh
