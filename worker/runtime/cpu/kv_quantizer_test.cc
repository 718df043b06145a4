// The q4_0 page encoder: never worse than the reference rounding, clearly
// better on model-like rows, and pinned on a hand-checked block.
#include "worker/runtime/cpu/kv_quantizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh {
namespace {

using kernels::BlockQ4_0;

TEST(KvQuantizerTest, EncoderChoice) {
  EXPECT_EQ(GetKvEncoder(TensorType::kQ4_0, KvRounding::kMinError), QuantizeRowQ4_0MinError);
  EXPECT_EQ(GetKvEncoder(TensorType::kQ4_0, KvRounding::kReference), kernels::QuantizeRowQ4_0);
  // q3_nl has one rounding, its least-error quantizer, under either name.
  EXPECT_EQ(GetKvEncoder(TensorType::kQ3_NL, KvRounding::kMinError), kernels::QuantizeRowQ3_NL);
  EXPECT_EQ(GetKvEncoder(TensorType::kQ3_NL, KvRounding::kReference), kernels::QuantizeRowQ3_NL);
  // Other types have one rounding.
  EXPECT_EQ(GetKvEncoder(TensorType::kQ8_0, KvRounding::kMinError),
            GetKvEncoder(TensorType::kQ8_0, KvRounding::kReference));
  EXPECT_NE(GetKvEncoder(TensorType::kF16, KvRounding::kMinError), nullptr);
}

TEST(KvQuantizerTest, NeverWorseThanReferenceAndBetterOnAverage) {
  kernels::TestRandom rng(4);
  constexpr int64_t kN = 32 * 256;
  const std::vector<float> x = kernels::MakeTestRow(rng, kN);
  std::vector<BlockQ4_0> ours(kN / 32), reference(kN / 32);
  QuantizeRowQ4_0MinError(x.data(), ours.data(), kN);
  kernels::QuantizeRowQ4_0(x.data(), reference.data(), kN);
  double total_ours = 0.0, total_reference = 0.0;
  for (int64_t b = 0; b < kN / 32; ++b) {
    const double e_ours = Q4_0SquaredError(x.data() + b * 32, &ours[b], 32);
    const double e_ref = Q4_0SquaredError(x.data() + b * 32, &reference[b], 32);
    // The reference scale is among the candidates (up to its own rounding of
    // levels against the unrounded scale).
    ASSERT_LE(e_ours, e_ref * (1 + 1e-6) + 1e-12) << "block " << b;
    total_ours += e_ours;
    total_reference += e_ref;
  }
  // Bell-shaped rows gain little (about 5%); rows with outlier channels,
  // like K, gain more.
  EXPECT_LT(total_ours, 0.96 * total_reference);
}

TEST(KvQuantizerTest, ExactBlocksStayExact) {
  // Values d·(level - 8) with d = 0.5 and the extreme at level 0.
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = 0.5f * static_cast<float>((j * 5) % 16 - 8);
  BlockQ4_0 block;
  QuantizeRowQ4_0MinError(x.data(), &block, 32);
  EXPECT_EQ(Q4_0SquaredError(x.data(), &block, 32), 0.0);
}

TEST(KvQuantizerTest, ZeroBlock) {
  std::vector<float> x(32, 0.0f);
  BlockQ4_0 block;
  QuantizeRowQ4_0MinError(x.data(), &block, 32);
  EXPECT_EQ(HalfToFloat(block.d), 0.0f);
  for (uint8_t q : block.qs) EXPECT_EQ(q, 0x88);
}

TEST(KvQuantizerTest, OneOutlierPinned) {
  // One value of -8 among 31 values of 3.4: the reference keeps d = 1 (the
  // outlier exact, every 3.4 off by 0.4); the least-squares choice moves the
  // scale so 3.4 is hit closely at a small cost on the outlier.
  std::vector<float> x(32, 3.4f);
  x[0] = -8.0f;
  BlockQ4_0 ours, reference;
  QuantizeRowQ4_0MinError(x.data(), &ours, 32);
  kernels::QuantizeRowQ4_0(x.data(), &reference, 32);
  EXPECT_NEAR(Q4_0SquaredError(x.data(), &reference, 32), 31 * 0.16, 1e-4);
  // d = 1.1348 (f16): 3.4 → level 11 (3.404), -8 → level 1 (-7.943).
  EXPECT_EQ(HalfToFloat(ours.d), 1.1347656f);
  EXPECT_EQ(ours.qs[0], 0xB1);
  for (int j = 1; j < 16; ++j) EXPECT_EQ(ours.qs[j], 0xBB) << j;
  EXPECT_NEAR(Q4_0SquaredError(x.data(), &ours, 32), 0.0037805, 1e-6);
}

}  // namespace
}  // namespace kvmesh
