// The harness itself: its random rows are pinned, it accepts kernels that
// differ from the reference only in float rounding order, and it rejects
// kernels with real mistakes.
#include "worker/kernels/cpu/kernel_parity.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

TEST(TestRandomTest, SequenceIsPinned) {
  TestRandom rng(0);
  EXPECT_EQ(rng.NextBits(), 0xE220A8397B1DCDAFull);  // SplitMix64's first output for seed 0
  TestRandom a(5), b(5);
  for (int i = 0; i < 100; ++i) ASSERT_EQ(a.Bell(), b.Bell());
}

TEST(TestRandomTest, BellHasUnitVarianceAndBoundedRange) {
  TestRandom rng(3);
  double sum = 0.0, sum_squares = 0.0;
  constexpr int kCount = 100000;
  for (int i = 0; i < kCount; ++i) {
    const float v = rng.Bell();
    ASSERT_LT(std::fabs(v), 3.47f);
    sum += v;
    sum_squares += static_cast<double>(v) * v;
  }
  EXPECT_NEAR(sum / kCount, 0.0, 0.01);
  EXPECT_NEAR(sum_squares / kCount, 1.0, 0.02);
}

// Sums in float, front to back, like a naive vector kernel would.
float FloatAccumulatingF32(int64_t n, const void* w, const void* x) {
  const float* wf = static_cast<const float*>(w);
  const float* xf = static_cast<const float*>(x);
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += wf[i] * xf[i];
  return sum;
}

// Eight float lanes reduced at the end, like an AVX kernel.
float LanedQ8_0(int64_t n, const void* w, const void* x) {
  const BlockQ8_0* wb = static_cast<const BlockQ8_0*>(w);
  const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(x);
  float lanes[8] = {};
  for (int64_t b = 0; b < n / 32; ++b) {
    int32_t sumi = 0;
    for (int j = 0; j < 32; ++j) sumi += wb[b].qs[j] * xb[b].qs[j];
    lanes[b % 8] += HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d) * static_cast<float>(sumi);
  }
  float sum = 0.0f;
  for (float lane : lanes) sum += lane;
  return sum;
}

float DropsLastBlockQ4_0(int64_t n, const void* w, const void* x) {
  return VecDotQ4_0Q8_0(n - 32, w, x);
}

float SlightlyOffQ4_0(int64_t n, const void* w, const void* x) {
  return VecDotQ4_0Q8_0(n, w, x) * (1.0f + 1e-3f);
}

float IgnoresOffsetQ4_1(int64_t n, const void* w, const void* x) {
  std::vector<BlockQ4_1> copy(static_cast<const BlockQ4_1*>(w),
                              static_cast<const BlockQ4_1*>(w) + n / 32);
  for (BlockQ4_1& block : copy) block.m = 0;
  return VecDotQ4_1Q8_1(n, copy.data(), x);
}

float IgnoresMinsQ4_K(int64_t n, const void* w, const void* x) {
  std::vector<BlockQ4_K> copy(static_cast<const BlockQ4_K*>(w),
                              static_cast<const BlockQ4_K*>(w) + n / 256);
  for (BlockQ4_K& block : copy) block.dmin = 0;
  return VecDotQ4_KQ8_K(n, copy.data(), x);
}

float OffByConstantQ6_K(int64_t n, const void* w, const void* x) {
  return VecDotQ6_KQ8_K(n, w, x) + 1e-2f;
}

TEST(CheckVecDotParityTest, AcceptsKernelsThatOnlyReorderFloatSums) {
  ParityReport report =
      CheckVecDotParity(*GetReferenceTypeTraits(TensorType::kF32), FloatAccumulatingF32);
  EXPECT_TRUE(report.ok) << report.failure;
  report = CheckVecDotParity(*GetReferenceTypeTraits(TensorType::kQ8_0), LanedQ8_0);
  EXPECT_TRUE(report.ok) << report.failure;
  EXPECT_LT(report.worst_ratio, 0.1);
}

TEST(CheckVecDotParityTest, RejectsBrokenKernels) {
  struct Case {
    TensorType type;
    VecDotFn kernel;
  };
  const Case cases[] = {
      {TensorType::kQ4_0, DropsLastBlockQ4_0}, {TensorType::kQ4_0, SlightlyOffQ4_0},
      {TensorType::kQ4_1, IgnoresOffsetQ4_1},  {TensorType::kQ4_K, IgnoresMinsQ4_K},
      {TensorType::kQ6_K, OffByConstantQ6_K},
  };
  for (const Case& c : cases) {
    const ParityReport report = CheckVecDotParity(*GetReferenceTypeTraits(c.type), c.kernel);
    EXPECT_FALSE(report.ok) << TensorTypeName(c.type);
    EXPECT_FALSE(report.failure.empty());
    EXPECT_GT(report.worst_ratio, 1.0);
  }
}

TEST(CheckVecDotParityTest, ReportsTheFirstFailure) {
  ParityOptions options;
  options.rows_per_length = 2;
  const ParityReport report =
      CheckVecDotParity(*GetReferenceTypeTraits(TensorType::kQ4_0), DropsLastBlockQ4_0, options);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.rows_checked, 16);
  // Rows 0 and 1 (zero weights, zero activations) give 0 with or without the
  // dropped block; row 2 of the one-block length is the first to differ.
  EXPECT_EQ(report.failure.rfind("Q4_0 row 2 of length 32:", 0), 0u) << report.failure;
}

}  // namespace
}  // namespace kvmesh::kernels
