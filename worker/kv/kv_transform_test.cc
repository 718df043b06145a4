// The KV transforms: the Hadamard matrix itself (pinned for n = 4), its
// orthonormality, that q·k is preserved by rotation and moved by the same
// constant for every key by centering, and that a weighted sum of rotated V
// rows comes back exactly.
#include "worker/kv/kv_transform.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "worker/kv/kv_bias.h"

namespace kvmesh {
namespace {

double Dot(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

std::vector<float> Pattern(int n, int seed) {
  std::vector<float> v(n);
  for (int i = 0; i < n; ++i) v[i] = std::sin(0.7f * i + seed) * (i % 7 == 0 ? 9.0f : 1.0f);
  return v;
}

TEST(HadamardTest, SylvesterOrderForFour) {
  // H4 / 2 applied to unit vectors gives its columns.
  const float expected[4][4] = {{0.5f, 0.5f, 0.5f, 0.5f},
                                {0.5f, -0.5f, 0.5f, -0.5f},
                                {0.5f, 0.5f, -0.5f, -0.5f},
                                {0.5f, -0.5f, -0.5f, 0.5f}};
  for (int col = 0; col < 4; ++col) {
    float x[4] = {0, 0, 0, 0};
    x[col] = 1.0f;
    HadamardTransform(x, 4);
    for (int row = 0; row < 4; ++row) EXPECT_EQ(x[row], expected[col][row]) << row << "," << col;
  }
}

TEST(HadamardTest, IsItsOwnInverseAndKeepsNorms) {
  for (int n : {1, 2, 32, 64, 128}) {
    std::vector<float> x = Pattern(n, 1);
    const std::vector<float> original = x;
    HadamardTransform(x.data(), n);
    EXPECT_NEAR(Dot(x, x), Dot(original, original), 1e-4 * Dot(original, original));
    HadamardTransform(x.data(), n);
    for (int i = 0; i < n; ++i) EXPECT_NEAR(x[i], original[i], 1e-5) << n << " " << i;
  }
}

TEST(HadamardTest, SpreadsAnOutlierEvenly) {
  std::vector<float> x(64, 0.0f);
  x[5] = 8.0f;
  HadamardTransform(x.data(), 64);
  for (float v : x) EXPECT_EQ(std::fabs(v), 1.0f);
}

TEST(HadamardTest, PowerOfTwo) {
  EXPECT_TRUE(IsPowerOfTwo(1));
  EXPECT_TRUE(IsPowerOfTwo(64));
  EXPECT_FALSE(IsPowerOfTwo(0));
  EXPECT_FALSE(IsPowerOfTwo(96));
}

TEST(KvTransformTest, RotationPreservesScoresAndCenteringShiftsThemUniformly) {
  KvLayout layout;
  layout.n_layer = 2;
  layout.n_head_kv = 2;
  layout.head_dim = 64;
  std::vector<float> mean(2 * 2 * 64);
  for (size_t i = 0; i < mean.size(); ++i) mean[i] = 0.01f * static_cast<float>(i);
  layout.k_bias = std::make_shared<const KvBias>("id", "m", 2, 2, 64, 1, mean);
  layout.k_rotated = true;

  const std::vector<float> q = Pattern(64, 3);
  const std::vector<float> m(mean.begin() + 3 * 64, mean.begin() + 4 * 64);  // layer 1, head 1
  std::vector<float> q_rotated = q;
  TransformQuery(layout, q_rotated.data());
  for (int key = 0; key < 3; ++key) {
    std::vector<float> k = Pattern(64, 10 + key);
    std::vector<float> k_stored = k;
    TransformKey(layout, 1, 1, k_stored.data());
    // q'·k'' = q·k - q·m for every key.
    EXPECT_NEAR(Dot(q_rotated, k_stored), Dot(q, k) - Dot(q, m), 1e-4) << key;
  }
}

TEST(KvTransformTest, RotatedValuesMixBackToTheOriginalSum) {
  KvLayout layout;
  layout.n_layer = 1;
  layout.n_head_kv = 1;
  layout.head_dim = 64;
  layout.v_rotated = true;
  const float weights[3] = {0.5f, 0.3f, 0.2f};
  std::vector<float> want(64, 0.0f), mixed(64, 0.0f);
  for (int j = 0; j < 3; ++j) {
    std::vector<float> v = Pattern(64, 20 + j);
    for (int d = 0; d < 64; ++d) want[d] += weights[j] * v[d];
    TransformValue(layout, v.data());
    for (int d = 0; d < 64; ++d) mixed[d] += weights[j] * v[d];
  }
  RestoreAttentionOutput(layout, mixed.data());
  for (int d = 0; d < 64; ++d) EXPECT_NEAR(mixed[d], want[d], 1e-5) << d;
}

TEST(KvTransformTest, NoTransformsIsANoOp) {
  KvLayout layout;
  layout.n_layer = 1;
  layout.n_head_kv = 1;
  layout.head_dim = 64;
  std::vector<float> k = Pattern(64, 2);
  const std::vector<float> original = k;
  TransformKey(layout, 0, 0, k.data());
  TransformQuery(layout, k.data());
  TransformValue(layout, k.data());
  RestoreAttentionOutput(layout, k.data());
  EXPECT_EQ(k, original);
}

}  // namespace
}  // namespace kvmesh
