// Every SIMD tier against the scalar references: quantizers and conversions
// byte for byte, vec_dot of the quantized types bit for bit, vec_dot of the
// float types through the parity harness (kernel_parity.h). Tiers the host
// cannot run are skipped, and say so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "worker/kernels/cpu/cpu_features.h"
#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {
namespace {

using T = TensorType;

struct Case {
  T type;
  Isa isa;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  return TensorTypeName(info.param.type) + "_" + std::string(IsaName(info.param.isa));
}

std::vector<Case> Cases(std::initializer_list<T> types) {
  std::vector<Case> cases;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    for (T type : types) cases.push_back({type, isa});
  }
  return cases;
}

#define SKIP_IF_UNSUPPORTED(isa)                        \
  if (!IsaSupported(isa))                               \
  GTEST_SKIP() << "this CPU lacks the " << IsaName(isa) \
               << " tier (host tier: " << IsaName(HostIsa()) << ")"

std::vector<uint8_t> Bytes(const TypeTraits& traits, int64_t n) {
  return std::vector<uint8_t>(RowSizeBytes(traits, n) + 16, 0xAB);
}

// Rows that exercise the quantizers' edge cases on top of random ones.
std::vector<std::vector<float>> QuantizerRows(int64_t n) {
  std::vector<std::vector<float>> rows;
  TestRandom rng(7);
  for (int i = 0; i < 6; ++i) rows.push_back(MakeTestRow(rng, n));
  rows.push_back(std::vector<float>(n, 0.0f));
  // Exact ties: with amax 127 the scale is 1, so x.5 values sit on a tie.
  std::vector<float> ties(n);
  for (int64_t i = 0; i < n; ++i) ties[i] = (i % 32 == 0) ? 127.0f : (i % 7) - 3.5f;
  rows.push_back(ties);
  // Largest magnitude held by values of both signs, in both orders.
  std::vector<float> both(n, 0.25f);
  for (int64_t i = 0; i < n; i += 64) {
    both[i] = -3.0f;
    both[i + 1] = 3.0f;
    if (i + 40 < n) both[i + 40] = 3.0f;
    if (i + 41 < n) both[i + 41] = -3.0f;
  }
  rows.push_back(both);
  // Subnormal and tiny values.
  std::vector<float> tiny(n);
  for (int64_t i = 0; i < n; ++i) tiny[i] = std::numeric_limits<float>::denorm_min() * (i % 5 - 2);
  rows.push_back(tiny);
  return rows;
}

class QuantizerTest : public testing::TestWithParam<Case> {};

TEST_P(QuantizerTest, WritesTheReferenceBytes) {
  const Case c = GetParam();
  SKIP_IF_UNSUPPORTED(c.isa);
  const TypeTraits& ref = *GetReferenceTypeTraits(c.type);
  const TypeTraits& simd = *GetTypeTraits(c.type, c.isa);
  ASSERT_NE(simd.from_float, ref.from_float) << "the tier has no quantizer of its own";
  for (int64_t n : {int64_t{256}, int64_t{1024}}) {
    int row_index = 0;
    for (const std::vector<float>& row : QuantizerRows(n)) {
      std::vector<uint8_t> want = Bytes(ref, n), got = Bytes(ref, n);
      ref.from_float(row.data(), want.data(), n);
      simd.from_float(row.data(), got.data(), n);
      ASSERT_EQ(want, got) << "row " << row_index << " of length " << n;
      ++row_index;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    ActivationTypes, QuantizerTest,
    testing::ValuesIn(Cases({T::kQ8_0, T::kQ8_1, T::kQ8_K, T::kF16, T::kBF16})), CaseName);

class FloatConversionTest : public testing::TestWithParam<Case> {};

TEST_P(FloatConversionTest, OddLengthsMatchTheReference) {
  const Case c = GetParam();
  SKIP_IF_UNSUPPORTED(c.isa);
  const TypeTraits& ref = *GetReferenceTypeTraits(c.type);
  const TypeTraits& simd = *GetTypeTraits(c.type, c.isa);
  TestRandom rng(11);
  for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{33}, int64_t{100}}) {
    const std::vector<float> row = MakeTestRow(rng, n);
    std::vector<uint8_t> want = Bytes(ref, n), got = Bytes(ref, n);
    ref.from_float(row.data(), want.data(), n);
    simd.from_float(row.data(), got.data(), n);
    ASSERT_EQ(want, got) << n;  // includes the guard bytes past the row
    std::vector<float> back_want(n + 4, -1.0f), back_got(n + 4, -1.0f);
    ref.to_float(want.data(), back_want.data(), n);
    simd.to_float(want.data(), back_got.data(), n);
    ASSERT_EQ(0, std::memcmp(back_want.data(), back_got.data(), 4 * (n + 4))) << n;
  }
}

INSTANTIATE_TEST_SUITE_P(FloatTypes, FloatConversionTest,
                         testing::ValuesIn(Cases({T::kF16, T::kBF16})), CaseName);

class VecDotTest : public testing::TestWithParam<Case> {};

TEST_P(VecDotTest, PassesTheParityHarness) {
  const Case c = GetParam();
  SKIP_IF_UNSUPPORTED(c.isa);
  const TypeTraits& ref = *GetReferenceTypeTraits(c.type);
  const VecDotFn simd = GetTypeTraits(c.type, c.isa)->vec_dot;
  ASSERT_NE(simd, ref.vec_dot) << "the tier has no vec_dot of its own";
  ParityOptions options;
  options.long_length = 4096 + 32 * 3;  // a length that is no multiple of the lane counts
  const ParityReport report = CheckVecDotParity(ref, simd, options);
  EXPECT_TRUE(report.ok) << report.failure;
  EXPECT_EQ(report.rows_checked, 72);
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, VecDotTest,
                         testing::ValuesIn(Cases({T::kF32, T::kF16, T::kBF16, T::kQ4_0, T::kQ4_1,
                                                  T::kQ5_0, T::kQ5_1, T::kQ8_0, T::kQ4_K, T::kQ5_K,
                                                  T::kQ6_K})),
                         CaseName);

// The quantized types must agree exactly: integer block sums, then the
// reference's float steps in its order. (The float types accumulate in float
// lanes; the harness above covers them.)
class QuantizedVecDotTest : public testing::TestWithParam<Case> {};

TEST_P(QuantizedVecDotTest, EqualsTheReferenceBitForBit) {
  const Case c = GetParam();
  SKIP_IF_UNSUPPORTED(c.isa);
  const TypeTraits& ref = *GetReferenceTypeTraits(c.type);
  const TypeTraits& x_ref = *GetReferenceTypeTraits(ref.vec_dot_type);
  const VecDotFn simd = GetTypeTraits(c.type, c.isa)->vec_dot;
  TestRandom rng(99);
  for (int64_t n : {int64_t{256}, int64_t{2048}, int64_t{4352}}) {
    for (int r = 0; r < 8; ++r) {
      const std::vector<float> wf = MakeTestRow(rng, n), xf = MakeTestRow(rng, n);
      std::vector<uint8_t> w = Bytes(ref, n), x = Bytes(x_ref, n);
      ref.from_float(wf.data(), w.data(), n);
      x_ref.from_float(xf.data(), x.data(), n);
      const float want = ref.vec_dot(n, w.data(), x.data());
      const float got = simd(n, w.data(), x.data());
      ASSERT_EQ(std::memcmp(&want, &got, 4), 0)
          << n << " row " << r << ": " << got << " vs " << want;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(QuantizedTypes, QuantizedVecDotTest,
                         testing::ValuesIn(Cases({T::kQ4_0, T::kQ4_1, T::kQ5_0, T::kQ5_1, T::kQ8_0,
                                                  T::kQ4_K, T::kQ5_K, T::kQ6_K})),
                         CaseName);

TEST(TypeTraitsDispatchTest, EveryTierHasTheSameTypesAndPairings) {
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    for (T type : {T::kF32,  T::kF16,    T::kBF16,   T::kQ4_0,  T::kQ4_1,    T::kQ5_0,  T::kQ5_1,
                   T::kQ8_0, T::kQ8_1,   T::kQ4_K,   T::kQ5_K,  T::kQ6_K,    T::kQ8_K,  T::kQ2_K,
                   T::kQ3_K, T::kIQ4_NL, T::kIQ4_XS, T::kIQ3_S, T::kIQ3_XXS, T::kIQ2_XS}) {
      const TypeTraits* ref = GetReferenceTypeTraits(type);
      const TypeTraits* tier = GetTypeTraits(type, isa);
      ASSERT_NE(tier, nullptr);
      EXPECT_EQ(tier->vec_dot_type, ref->vec_dot_type);
      EXPECT_EQ(tier->block_size, ref->block_size);
      EXPECT_EQ(tier->bytes_per_block, ref->bytes_per_block);
      EXPECT_EQ(tier->vec_dot == nullptr, ref->vec_dot == nullptr);
    }
    EXPECT_EQ(GetTypeTraits(T::kIQ2_XXS, isa), nullptr);
  }
  EXPECT_EQ(GetTypeTraits(T::kQ4_0, Isa::kScalar)->vec_dot,
            GetReferenceTypeTraits(T::kQ4_0)->vec_dot);
  EXPECT_EQ(GetTypeTraits(T::kQ4_0), GetTypeTraits(T::kQ4_0, ActiveIsa()));
}

}  // namespace
}  // namespace kvmesh::kernels
