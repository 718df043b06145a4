#include "worker/kernels/cpu/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <limits>
#include <string>
#include <vector>

#include "worker/kernels/cpu/kernel_parity.h"

namespace kvmesh::kernels {
namespace {

TEST(RmsNormTest, HandValues) {
  // mean(x^2) = 4, so the scale is exactly 1/2.
  const float x[] = {2.0f, -2.0f, 2.0f, -2.0f};
  const float weight[] = {1.0f, 2.0f, 0.5f, -1.0f};
  float out[4];
  RmsNorm(x, weight, out, 4, 0.0f);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -2.0f);
  EXPECT_EQ(out[2], 0.5f);
  EXPECT_EQ(out[3], 1.0f);
}

TEST(RmsNormTest, EpsilonJoinsTheMeanAndOutputMayAliasInput) {
  // mean(x^2) + eps = 1 + 3 = 4.
  float x[] = {1.0f, -1.0f, 1.0f, 1.0f};
  const float weight[] = {1.0f, 1.0f, 4.0f, 1.0f};
  RmsNorm(x, weight, x, 4, 3.0f);
  EXPECT_EQ(x[0], 0.5f);
  EXPECT_EQ(x[1], -0.5f);
  EXPECT_EQ(x[2], 2.0f);
  EXPECT_EQ(x[3], 0.5f);
}

TEST(RmsNormTest, MatchesFormula) {
  const float x[] = {1.0f, 2.0f, 3.0f};
  const float weight[] = {1.0f, 1.0f, 1.0f};
  float out[3];
  RmsNorm(x, weight, out, 3, 1e-5f);
  const double scale = 1.0 / std::sqrt(14.0 / 3.0 + 1e-5);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(out[i], x[i] * scale, 1e-6) << i;
}

TEST(SoftmaxTest, EqualValuesAreUniform) {
  float x[] = {1.0f, 1.0f, 1.0f, 1.0f};
  Softmax(x, 4);
  for (float v : x) EXPECT_EQ(v, 0.25f);
}

TEST(SoftmaxTest, MaskedEntriesGetZeroAndLargeValuesDoNotOverflow) {
  const float inf = std::numeric_limits<float>::infinity();
  float x[] = {1000.0f, -inf, 1000.0f};
  Softmax(x, 3);
  EXPECT_EQ(x[0], 0.5f);
  EXPECT_EQ(x[1], 0.0f);
  EXPECT_EQ(x[2], 0.5f);
}

TEST(SoftmaxTest, HandValues) {
  float x[] = {0.0f, 1.0f, 2.0f};
  Softmax(x, 3);
  const double e1 = std::exp(1.0), e2 = std::exp(2.0), sum = 1.0 + e1 + e2;
  EXPECT_NEAR(x[0], 1.0 / sum, 1e-7);  // 0.0900306
  EXPECT_NEAR(x[1], e1 / sum, 1e-7);   // 0.2447285
  EXPECT_NEAR(x[2], e2 / sum, 1e-7);   // 0.6652410
}

TEST(SiluTest, HandValues) {
  const float x[] = {0.0f, 100.0f, 1.0f, -1.0f};
  float out[4];
  Silu(x, out, 4);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 100.0f);
  EXPECT_NEAR(out[2], 0.7310586, 1e-7);
  EXPECT_NEAR(out[3], -0.2689414, 1e-7);
}

TEST(SwiGluTest, GatesTheUpProjection) {
  const float gate[] = {0.0f, 100.0f, 1.0f};
  const float up[] = {5.0f, 2.0f, 2.0f};
  float out[3];
  SwiGlu(gate, up, out, 3);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 200.0f);
  EXPECT_NEAR(out[2], 1.4621172, 1e-6);
}

TEST(RopeTest, PositionZeroIsIdentity) {
  float a[] = {0.3f, -1.5f, 2.25f, 7.0f};
  float b[] = {0.3f, -1.5f, 2.25f, 7.0f};
  RopeNorm(a, 4, 4, 0, 10000.0f, 1.0f);
  RopeNeox(b, 4, 4, 0, 10000.0f, 1.0f);
  const float expected[] = {0.3f, -1.5f, 2.25f, 7.0f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(a[i], expected[i]);
    EXPECT_EQ(b[i], expected[i]);
  }
}

// base 10000 over 4 dims: pair 0 turns by pos, pair 1 by pos / 100.
TEST(RopeTest, NormRotatesAdjacentPairs) {
  float x[] = {1.0f, 0.0f, 1.0f, 0.0f};
  RopeNorm(x, 4, 4, 1, 10000.0f, 1.0f);
  EXPECT_NEAR(x[0], std::cos(1.0), 1e-7);
  EXPECT_NEAR(x[1], std::sin(1.0), 1e-7);
  EXPECT_NEAR(x[2], std::cos(0.01), 1e-7);
  EXPECT_NEAR(x[3], std::sin(0.01), 1e-7);
}

TEST(RopeTest, NeoxRotatesHalves) {
  float x[] = {1.0f, 1.0f, 0.0f, 0.0f};
  RopeNeox(x, 4, 4, 1, 10000.0f, 1.0f);
  EXPECT_NEAR(x[0], std::cos(1.0), 1e-7);
  EXPECT_NEAR(x[1], std::cos(0.01), 1e-7);
  EXPECT_NEAR(x[2], std::sin(1.0), 1e-7);
  EXPECT_NEAR(x[3], std::sin(0.01), 1e-7);
}

TEST(RopeTest, SecondComponentRotatesTheOtherWay) {
  float x[] = {0.0f, 1.0f};
  RopeNorm(x, 2, 2, 2, 10000.0f, 1.0f);
  EXPECT_NEAR(x[0], -std::sin(2.0), 1e-7);
  EXPECT_NEAR(x[1], std::cos(2.0), 1e-7);
}

TEST(RopeTest, DimensionsPastNRotPassThrough) {
  float x[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  RopeNeox(x, 6, 4, 7, 10000.0f, 1.0f);
  EXPECT_EQ(x[4], 5.0f);
  EXPECT_EQ(x[5], 6.0f);
  float y[] = {1.0f, 2.0f, 3.0f, 4.0f, 5.0f, 6.0f};
  RopeNorm(y, 6, 4, 7, 10000.0f, 1.0f);
  EXPECT_EQ(y[4], 5.0f);
  EXPECT_EQ(y[5], 6.0f);
}

TEST(RopeTest, FreqScaleMultipliesTheAngle) {
  // Halving the frequency at position 2 equals full frequency at position 1,
  // bit for bit (scaling by powers of two is exact).
  float a[] = {0.6f, -0.8f, 1.5f, 2.5f, -1.0f, 0.25f, 3.0f, -2.0f};
  float b[] = {0.6f, -0.8f, 1.5f, 2.5f, -1.0f, 0.25f, 3.0f, -2.0f};
  RopeNorm(a, 8, 8, 2, 10000.0f, 0.5f);
  RopeNorm(b, 8, 8, 1, 10000.0f, 1.0f);
  for (int i = 0; i < 8; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(RopeTest, AnglesAreBuiltUpInFloatLikeGgml) {
  // theta_i = freq_scale * (pos * s^i) with s = powf(base, -2/n_rot) and the
  // powers formed by repeated float multiplication, not powf(base, -2i/n_rot).
  constexpr int kDim = 128;
  std::vector<float> x(kDim);
  for (int i = 0; i < kDim; ++i) x[i] = 0.5f + static_cast<float>(i);
  std::vector<float> rotated = x;
  RopeNeox(rotated.data(), kDim, kDim, 777, 500000.0f, 0.25f);
  const float step = std::pow(500000.0f, -2.0f / kDim);
  float theta = 777.0f;
  for (int i = 0; i < kDim / 2; ++i) {
    const float angle = 0.25f * theta;
    const float c = std::cos(angle), s = std::sin(angle);
    EXPECT_EQ(rotated[i], x[i] * c - x[i + kDim / 2] * s) << i;
    EXPECT_EQ(rotated[i + kDim / 2], x[i] * s + x[i + kDim / 2] * c) << i;
    theta *= step;
  }
}

TEST(RopeTest, LongHeadAtLargePositionTracksExactAngles) {
  constexpr int kDim = 128;
  constexpr int64_t kPos = 1000;
  std::vector<float> x(kDim, 0.0f);
  for (int i = 0; i < kDim; i += 2) x[i] = 1.0f;
  RopeNorm(x.data(), kDim, kDim, kPos, 10000.0f, 1.0f);
  for (int i = 0; i < kDim / 2; ++i) {
    const double angle = kPos * std::pow(10000.0, -2.0 * i / kDim);
    // Float angles accumulate a little drift over the 64 multiplications.
    EXPECT_NEAR(x[2 * i], std::cos(angle), 2e-4) << i;
    EXPECT_NEAR(x[2 * i + 1], std::sin(angle), 2e-4) << i;
  }
}

// --- SIMD tiers (GetRowOps) -------------------------------------------------

std::vector<Isa> SupportedSimdTiers() {
  std::vector<Isa> tiers;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    if (IsaSupported(isa)) tiers.push_back(isa);
  }
  return tiers;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(RowOpsTest, ScalarTierIsTheReference) {
  EXPECT_EQ(GetRowOps(Isa::kScalar).rms_norm, &RmsNorm);
  EXPECT_EQ(GetRowOps(Isa::kScalar).swiglu, &SwiGlu);
  EXPECT_EQ(GetRowOps(Isa::kScalar).round_to_half, &RoundToHalf);
  EXPECT_EQ(GetRowOps(Isa::kScalar).exp_shifted, &ExpShifted);
  EXPECT_EQ(GetRowOps(Isa::kScalar).scale, &Scale);
}

// float(exp(double(d))), or 0 below kExpShiftedFloor: what exp_shifted gives.
float RoundedExpAboveFloor(float d) {
  return d < kExpShiftedFloor ? 0.0f : static_cast<float>(std::exp(static_cast<double>(d)));
}

// Softmax's exps: each is the correctly rounded expf of x - shift (so within
// a few ulps of libm's and almost always equal), and the sum is theirs (in
// double, to a few double ulps); odd lengths exercise the tails.
TEST(RowOpsTest, ExpShiftedIsTheRoundedExpAndItsSum) {
  TestRandom rng(9);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{17}, int64_t{1000}}) {
    std::vector<float> x(n);
    for (float& v : x) v = (rng.Uniform() - 1.0f) * 40.0f;  // scores minus their max: <= 0
    std::vector<float> want = x;
    const double want_sum = ExpShifted(want.data(), n, 0.5f);
    for (Isa isa : SupportedSimdTiers()) {
      std::vector<float> got = x;
      const double sum = GetRowOps(isa).exp_shifted(got.data(), n, 0.5f);
      double sum_of_got = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const float rounded = RoundedExpAboveFloor(x[i] - 0.5f);
        ASSERT_EQ(Bits(rounded), Bits(got[i])) << IsaName(isa) << " x " << x[i];
        ASSERT_LE(std::llabs(static_cast<int64_t>(Bits(want[i])) - Bits(got[i])), 4);
        sum_of_got += got[i];
      }
      EXPECT_NEAR(sum, sum_of_got, 1e-14 * sum_of_got) << IsaName(isa);
      EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << IsaName(isa);
    }
  }
}

// A million scores minus their max, over softmax's whole useful range: the
// SIMD exps are float(exp(double)) for all of them (the double exp is good to
// about 5e-16, so a difference would need an input within that of a float
// rounding tie).
TEST(RowOpsTest, ExpShiftedIsTheRoundedExpOverAMillionInputs) {
  TestRandom rng(10);
  constexpr int64_t kN = 1 << 20;
  std::vector<float> x(kN);
  for (float& v : x) v = (rng.Uniform() - 1.0f) * 104.0f;  // expf underflows below -103.9
  for (Isa isa : SupportedSimdTiers()) {
    std::vector<float> got = x;
    GetRowOps(isa).exp_shifted(got.data(), kN, 0.0f);
    int64_t differ = 0;
    for (int64_t i = 0; i < kN; ++i) {
      differ += Bits(RoundedExpAboveFloor(x[i])) != Bits(got[i]);
    }
    EXPECT_EQ(differ, 0) << IsaName(isa);
  }
}

// Scores far below the largest give weights of exactly 0, never subnormal
// floats (which would slow every later operation on them), and the floor is
// where the contract puts it, on every tier; NaN stays NaN.
TEST(RowOpsTest, ExpShiftedFlushesWeightsBelowItsFloor) {
  std::vector<float> x;
  for (float d = -120.0f; d <= 0.0f; d += 0.125f) x.push_back(d);
  const float floor = kExpShiftedFloor;
  x.insert(x.end(),
           {floor, std::nextafter(floor, 0.0f), std::nextafter(floor, -1000.0f),
            -std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN()});
  std::vector<Isa> isas = SupportedSimdTiers();
  isas.push_back(Isa::kScalar);
  for (Isa isa : isas) {
    std::vector<float> got = x;
    GetRowOps(isa).exp_shifted(got.data(), static_cast<int64_t>(got.size()), 0.0f);
    for (size_t i = 0; i < x.size(); ++i) {
      if (std::isnan(x[i])) {
        EXPECT_TRUE(std::isnan(got[i])) << IsaName(isa);
        continue;
      }
      EXPECT_NE(std::fpclassify(got[i]), FP_SUBNORMAL) << IsaName(isa) << " d " << x[i];
      if (x[i] < floor) {
        EXPECT_EQ(got[i], 0.0f) << IsaName(isa) << " d " << x[i];
      } else {
        EXPECT_GE(got[i], std::exp(floor) * 0.999f) << IsaName(isa) << " d " << x[i];
      }
    }
  }
}

// Every float whose top 20 bits are given (the rest random), so every
// exponent, the half subnormals, the ties and the overflow to infinity are
// all met, plus the specials: the SIMD rounding equals the reference's bits.
TEST(RowOpsTest, RoundToHalfEqualsTheReferenceBitForBit) {
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.0f, -0.0f, 1.0f,     65504.0f, 65519.0f, 65520.0f, -65520.0f,
                          inf,  -inf,  5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-45f};
  TestRandom rng(12);
  for (uint32_t top = 0; top < (1u << 20); ++top) {
    const uint32_t low = static_cast<uint32_t>(rng.Uniform() * 4096.0f) & 0xFFFu;
    const uint32_t bits = top << 12 | low;
    float f;
    std::memcpy(&f, &bits, 4);
    if (!std::isnan(f)) x.push_back(f);
    // The exact tie between two normal halves with these top bits.
    const uint32_t tie = (top << 12) | 0x1000u;
    std::memcpy(&f, &tie, 4);
    if (!std::isnan(f)) x.push_back(f);
  }
  const int64_t n = static_cast<int64_t>(x.size()) - 3;  // odd tail
  std::vector<float> want(x.begin(), x.begin() + n);
  RoundToHalf(want.data(), n);
  for (Isa isa : SupportedSimdTiers()) {
    std::vector<float> got(x.begin(), x.begin() + n);
    GetRowOps(isa).round_to_half(got.data(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(Bits(want[i]), Bits(got[i])) << IsaName(isa) << " x " << x[i];
    }
    float nan = std::numeric_limits<float>::quiet_NaN();
    GetRowOps(isa).round_to_half(&nan, 1);
    EXPECT_TRUE(std::isnan(nan)) << IsaName(isa);
  }
}

TEST(RowOpsTest, ScaleEqualsTheReferenceBitForBit) {
  for (Isa isa : SupportedSimdTiers()) {
    TestRandom rng(37);
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{16}, int64_t{33}, int64_t{1000}}) {
      const std::vector<float> x = MakeTestRow(rng, n);
      std::vector<float> want = x, got = x;
      Scale(want.data(), n, 0.3f);
      GetRowOps(isa).scale(got.data(), n, 0.3f);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(Bits(want[i]), Bits(got[i])) << IsaName(isa) << " n " << n << " i " << i;
        ASSERT_EQ(want[i], x[i] * 0.3f);
      }
    }
  }
}

TEST(RowOpsTest, RmsNormEqualsTheReferenceBitForBit) {
  for (Isa isa : SupportedSimdTiers()) {
    TestRandom rng(31);
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{64}, int64_t{172}, int64_t{2048}}) {
      const std::vector<float> x = MakeTestRow(rng, n), w = MakeTestRow(rng, n);
      std::vector<float> want(n), got(n);
      RmsNorm(x.data(), w.data(), want.data(), n, 1e-5f);
      GetRowOps(isa).rms_norm(x.data(), w.data(), got.data(), n, 1e-5f);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_EQ(Bits(want[i]), Bits(got[i])) << IsaName(isa) << " n=" << n << " i=" << i;
      }
    }
  }
}

// The SIMD SwiGLU rounds exp once from double precision, i.e. it uses the
// correctly rounded expf; against that it is exact. glibc's expf misses the
// correctly rounded value near ties (about 0.06% of these inputs), so
// against the libm-based reference it is within a few ulps and nearly always
// exact.
TEST(RowOpsTest, SwiGluUsesTheCorrectlyRoundedExp) {
  constexpr int64_t kCount = 200003;  // odd: covers the vector tails
  std::vector<float> gate(kCount), up(kCount);
  TestRandom rng(4);
  for (int64_t i = 0; i < kCount; ++i) {
    gate[i] = (rng.Uniform() - 0.5f) * 60.0f;  // exp(-g) over e^-30 .. e^30
    up[i] = rng.Bell();
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float specials[] = {0.0f,   -0.0f,   1e-30f, -1e-30f, 88.0f, -88.0f, 89.0f, -89.0f,
                            104.0f, -104.0f, 200.0f, -200.0f, 1e30f, -1e30f, inf,   -inf};
  for (size_t i = 0; i < std::size(specials); ++i) gate[i] = specials[i];
  std::vector<float> rounded(kCount), libm(kCount);
  for (int64_t i = 0; i < kCount; ++i) {
    const float e = static_cast<float>(std::exp(-static_cast<double>(gate[i])));
    rounded[i] = gate[i] / (1.0f + e) * up[i];
  }
  SwiGlu(gate.data(), up.data(), libm.data(), kCount);
  for (Isa isa : SupportedSimdTiers()) {
    std::vector<float> got(kCount);
    GetRowOps(isa).swiglu(gate.data(), up.data(), got.data(), kCount);
    int64_t same_as_libm = 0;
    for (int64_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(Bits(rounded[i]), Bits(got[i]))
          << IsaName(isa) << " gate " << gate[i] << ": " << got[i] << " vs " << rounded[i];
      const int64_t ulps = std::llabs(static_cast<int64_t>(Bits(libm[i])) - Bits(got[i]));
      ASSERT_LE(ulps, 4) << IsaName(isa) << " gate " << gate[i];
      same_as_libm += ulps == 0;
    }
    std::printf("[ swiglu ] %s: %lld of %lld equal to the libm reference\n",
                std::string(IsaName(isa)).c_str(), static_cast<long long>(same_as_libm),
                static_cast<long long>(kCount));
    EXPECT_GE(same_as_libm, kCount - kCount / 500);
  }
  // NaN stays NaN.
  const float nan_gate = std::numeric_limits<float>::quiet_NaN(), one = 1.0f;
  for (Isa isa : SupportedSimdTiers()) {
    float out = 0.0f;
    GetRowOps(isa).swiglu(&nan_gate, &one, &out, 1);
    EXPECT_TRUE(std::isnan(out)) << IsaName(isa);
  }
}

}  // namespace
}  // namespace kvmesh::kernels
