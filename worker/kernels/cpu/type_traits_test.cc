#include "worker/kernels/cpu/type_traits.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <ostream>
#include <vector>

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/type_list.h"

namespace kvmesh::kernels {
namespace {

using T = TensorType;

const T kSupported[] = {T::kF32,   T::kF16,     T::kBF16,  T::kQ8_0, T::kQ4_0,   T::kQ3_NL,
                        T::kQ4_1,  T::kQ5_0,    T::kQ5_1,  T::kQ8_1, T::kQ4_K,   T::kQ5_K,
                        T::kQ6_K,  T::kQ8_K,    T::kQ2_K,  T::kQ3_K, T::kIQ4_NL, T::kIQ4_XS,
                        T::kIQ3_S, T::kIQ3_XXS, T::kIQ2_XS};

// Types that appear as weights (have a vec_dot).
const T kWeightTypes[] = {T::kF32,  T::kF16,    T::kBF16,   T::kQ8_0,  T::kQ4_0,    T::kQ4_1,
                          T::kQ5_0, T::kQ5_1,   T::kQ4_K,   T::kQ5_K,  T::kQ6_K,    T::kQ2_K,
                          T::kQ3_K, T::kIQ4_NL, T::kIQ4_XS, T::kIQ3_S, T::kIQ3_XXS, T::kIQ2_XS};

// The grid types have no point at zero: their smallest magnitude is the
// super-block's step times the codebook's least value.
bool IsGridType(T type) { return type == T::kIQ3_S || type == T::kIQ3_XXS || type == T::kIQ2_XS; }

std::string TypeName(const testing::TestParamInfo<T>& info) { return TensorTypeName(info.param); }

TEST(TypeTraitsTest, GeometryMatchesTheFileFormatTable) {
  for (T type : kSupported) {
    SCOPED_TRACE(TensorTypeName(type));
    const TypeTraits* traits = GetReferenceTypeTraits(type);
    ASSERT_NE(traits, nullptr);
    EXPECT_EQ(traits->type, type);
    const auto info = LookupTensorType(static_cast<uint32_t>(type));
    ASSERT_TRUE(info.has_value());
    EXPECT_EQ(traits->block_size, static_cast<int64_t>(info->block_size));
    EXPECT_EQ(traits->bytes_per_block, info->bytes_per_block);
  }
}

std::vector<T> ListedTypes() {
  std::vector<T> types;
#define KVMESH_LISTED_TYPE(Name, ...) types.push_back(T::k##Name);
  KVMESH_CPU_TYPE_LIST(KVMESH_LISTED_TYPE)
#undef KVMESH_LISTED_TYPE
  return types;
}

// The tables come from type_list.h: every tier has exactly its types, and
// the entry of each type reports that type.
TEST(TypeTraitsTest, EveryTierHasExactlyTheListedTypes) {
  const std::vector<T> listed = ListedTypes();
  EXPECT_THAT(listed, testing::UnorderedElementsAreArray(kSupported));
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    for (uint32_t id = 0; id < 64; ++id) {
      const T type = static_cast<T>(id);
      const TypeTraits* traits = GetTypeTraits(type, isa);
      const bool is_listed = std::find(listed.begin(), listed.end(), type) != listed.end();
      ASSERT_EQ(traits != nullptr, is_listed) << IsaName(isa) << " " << TensorTypeName(type);
      if (traits != nullptr) {
        EXPECT_EQ(traits->type, type) << IsaName(isa);
      }
    }
  }
}

TEST(TypeTraitsTest, BlockStructsMatchTheFileFormatTable) {
  auto bytes = [](T type) {
    return LookupTensorType(static_cast<uint32_t>(type))->bytes_per_block;
  };
  EXPECT_EQ(sizeof(BlockQ4_0), bytes(T::kQ4_0));
  EXPECT_EQ(sizeof(BlockQ3_NL), bytes(T::kQ3_NL));
  EXPECT_EQ(sizeof(BlockQ4_1), bytes(T::kQ4_1));
  EXPECT_EQ(sizeof(BlockQ5_0), bytes(T::kQ5_0));
  EXPECT_EQ(sizeof(BlockQ5_1), bytes(T::kQ5_1));
  EXPECT_EQ(sizeof(BlockQ8_0), bytes(T::kQ8_0));
  EXPECT_EQ(sizeof(BlockQ8_1), bytes(T::kQ8_1));
  EXPECT_EQ(sizeof(BlockQ4_K), bytes(T::kQ4_K));
  EXPECT_EQ(sizeof(BlockQ5_K), bytes(T::kQ5_K));
  EXPECT_EQ(sizeof(BlockQ6_K), bytes(T::kQ6_K));
  EXPECT_EQ(sizeof(BlockQ2_K), bytes(T::kQ2_K));
  EXPECT_EQ(sizeof(BlockQ3_K), bytes(T::kQ3_K));
  EXPECT_EQ(sizeof(BlockIQ4_NL), bytes(T::kIQ4_NL));
  EXPECT_EQ(sizeof(BlockIQ4_XS), bytes(T::kIQ4_XS));
  EXPECT_EQ(sizeof(BlockIQ3_S), bytes(T::kIQ3_S));
  EXPECT_EQ(sizeof(BlockIQ3_XXS), bytes(T::kIQ3_XXS));
  EXPECT_EQ(sizeof(BlockIQ2_XS), bytes(T::kIQ2_XS));
  EXPECT_EQ(sizeof(BlockQ8_K), bytes(T::kQ8_K));
}

TEST(TypeTraitsTest, VecDotPairingsAreLlamaCpps) {
  const std::pair<T, T> pairs[] = {
      {T::kF32, T::kF32},     {T::kF16, T::kF16},    {T::kBF16, T::kBF16},
      {T::kQ4_0, T::kQ8_0},   {T::kQ5_0, T::kQ8_0},  {T::kQ8_0, T::kQ8_0},
      {T::kQ4_1, T::kQ8_1},   {T::kQ5_1, T::kQ8_1},  {T::kQ4_K, T::kQ8_K},
      {T::kQ5_K, T::kQ8_K},   {T::kQ6_K, T::kQ8_K},  {T::kQ3_NL, T::kQ8_0},
      {T::kQ2_K, T::kQ8_K},   {T::kQ3_K, T::kQ8_K},  {T::kIQ4_NL, T::kQ8_0},
      {T::kIQ4_XS, T::kQ8_K}, {T::kIQ3_S, T::kQ8_K}, {T::kIQ3_XXS, T::kQ8_K},
      {T::kIQ2_XS, T::kQ8_K},
  };
  for (const auto& [weight, activation] : pairs) {
    SCOPED_TRACE(TensorTypeName(weight));
    const TypeTraits* traits = GetReferenceTypeTraits(weight);
    ASSERT_NE(traits, nullptr);
    EXPECT_EQ(traits->vec_dot_type, activation);
    EXPECT_NE(traits->vec_dot, nullptr);
    EXPECT_NE(traits->to_float, nullptr);
    EXPECT_NE(traits->from_float, nullptr);
  }
}

TEST(TypeTraitsTest, ActivationOnlyTypesHaveConvertersButNoVecDot) {
  for (T type : {T::kQ8_1, T::kQ8_K}) {
    const TypeTraits* traits = GetReferenceTypeTraits(type);
    ASSERT_NE(traits, nullptr);
    EXPECT_EQ(traits->vec_dot, nullptr);
    EXPECT_NE(traits->to_float, nullptr);
    EXPECT_NE(traits->from_float, nullptr);
  }
}

TEST(TypeTraitsTest, TypesWithoutKernelsAreRejected) {
  for (T type : {T::kIQ2_XXS, T::kIQ2_S, T::kIQ1_S, T::kIQ1_M, T::kI8, T::kI32, T::kF64, T::kTQ1_0,
                 T::kMXFP4}) {
    EXPECT_EQ(GetReferenceTypeTraits(type), nullptr) << TensorTypeName(type);
  }
}

TEST(TypeTraitsTest, RowSizeBytes) {
  EXPECT_EQ(RowSizeBytes(*GetReferenceTypeTraits(T::kQ4_K), 4096), 16u * 144u);
  EXPECT_EQ(RowSizeBytes(*GetReferenceTypeTraits(T::kQ8_0), 4096), 128u * 34u);
  EXPECT_EQ(RowSizeBytes(*GetReferenceTypeTraits(T::kF16), 5), 10u);
}

// Quantize-dequantize error of 4096 bell-shaped values (variance 1, seed 42)
// as RMS(error) / RMS(x). Measured (x86-64, g++ 12):
//   F16 2.076e-4, BF16 1.667e-3, Q8_0 = Q8_1 4.971e-3, Q8_K 6.173e-3,
//   Q4_0 0.08187, Q4_1 0.07717, Q5_0 0.03991, Q5_1 0.03688,
//   Q4_K 0.06773, Q5_K 0.03408, Q6_K 0.01639, Q3_NL 0.15547.
// These match uniform rounding noise, step / sqrt(12), for the step each
// format allows: 2^-10 and 2^-7 relative for f16 / bf16 (times ~0.75 for the
// average position in a binade); amax / 127 for the 8-bit types (amax about
// 2.1 sigma per 32-block, 2.7 per 256-block); amax / 8 and amax / 16 for
// Q4_0 / Q5_0; range / 15 and range / 31 for Q4_1 / Q5_1. The K types beat
// their legacy counterparts through the scale search. Q3_NL's 8 Lloyd-Max
// levels with a fitted scale per 32 values beat the 0.186 of one Lloyd-Max
// quantizer for the whole row.
//
// The quantizers use only exactly rounded operations (+ - * / sqrt, lrint),
// so the measurement is reproducible on any IEEE platform; the bounds sit
// about 1% above it. That is tight on purpose: dropping the K-quant scale
// search (+1.9% for Q4_K) or the 6-bit neighbour search (+1.2% for Q5_K)
// fails here.
struct ErrorBound {
  T type;
  double max_relative_rms;
};

void PrintTo(const ErrorBound& bound, std::ostream* os) {
  *os << TensorTypeName(bound.type) << " <= " << bound.max_relative_rms;
}

class RoundTripTest : public testing::TestWithParam<ErrorBound> {};

TEST_P(RoundTripTest, RelativeRmsErrorIsWithinBound) {
  const ErrorBound bound = GetParam();
  const TypeTraits& traits = *GetReferenceTypeTraits(bound.type);
  constexpr int64_t kN = 4096;
  TestRandom rng(42);
  std::vector<float> x(kN);
  for (float& v : x) v = rng.Bell();
  std::vector<uint64_t> q(RowSizeBytes(traits, kN) / 8 + 1);
  traits.from_float(x.data(), q.data(), kN);
  std::vector<float> y(kN);
  traits.to_float(q.data(), y.data(), kN);
  double error = 0.0, signal = 0.0;
  for (int64_t i = 0; i < kN; ++i) {
    error += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    signal += static_cast<double>(x[i]) * x[i];
  }
  const double relative_rms = std::sqrt(error / signal);
  EXPECT_LE(relative_rms, bound.max_relative_rms);
  if (bound.type == T::kF32) {
    EXPECT_EQ(relative_rms, 0.0);
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypes, RoundTripTest,
    testing::Values(
        ErrorBound{T::kF32, 0.0}, ErrorBound{T::kF16, 2.10e-4}, ErrorBound{T::kBF16, 1.69e-3},
        ErrorBound{T::kQ8_0, 5.02e-3}, ErrorBound{T::kQ8_1, 5.02e-3}, ErrorBound{T::kQ8_K, 6.24e-3},
        ErrorBound{T::kQ4_0, 0.0827}, ErrorBound{T::kQ4_1, 0.0780}, ErrorBound{T::kQ5_0, 0.0404},
        ErrorBound{T::kQ5_1, 0.0373}, ErrorBound{T::kQ4_K, 0.0684}, ErrorBound{T::kQ5_K, 0.0344},
        ErrorBound{T::kQ6_K, 0.01656}, ErrorBound{T::kQ3_NL, 0.157}, ErrorBound{T::kQ2_K, 0.2668},
        ErrorBound{T::kQ3_K, 0.1437}, ErrorBound{T::kIQ4_NL, 0.0733},
        ErrorBound{T::kIQ4_XS, 0.0739}, ErrorBound{T::kIQ3_S, 0.1275},
        ErrorBound{T::kIQ3_XXS, 0.1837}, ErrorBound{T::kIQ2_XS, 0.2926}),
    [](const testing::TestParamInfo<ErrorBound>& info) { return TensorTypeName(info.param.type); });

class EveryTypeTest : public testing::TestWithParam<T> {};

TEST_P(EveryTypeTest, ZerosRoundTripToZeros) {
  const TypeTraits& traits = *GetReferenceTypeTraits(GetParam());
  const int64_t n = 2 * kSuperBlockSize;
  std::vector<float> x(n, 0.0f);
  std::vector<uint64_t> q(RowSizeBytes(traits, n) / 8 + 1, ~0ull);
  traits.from_float(x.data(), q.data(), n);
  std::vector<float> y(n, 1.0f);
  traits.to_float(q.data(), y.data(), n);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], 0.0f) << i;
}

INSTANTIATE_TEST_SUITE_P(AllTypes, EveryTypeTest, testing::ValuesIn(kSupported), TypeName);

class WeightTypeTest : public testing::TestWithParam<T> {};

// A group of zeros inside a row of other values (a pruned or padded stretch)
// decodes to exact zeros, whatever scale the rest of its super-block gets -
// or, in a grid type, which cannot store a zero, to its least magnitude:
// under 1/128 of the super-block's largest value.
TEST_P(WeightTypeTest, AZeroStretchInARowDecodesToZeros) {
  const TypeTraits& traits = *GetReferenceTypeTraits(GetParam());
  const int64_t n = 2 * kSuperBlockSize;
  TestRandom rng(4);
  std::vector<float> x = MakeTestRow(rng, n);
  std::fill(x.begin() + 32, x.begin() + 64, 0.0f);
  std::vector<uint64_t> q(RowSizeBytes(traits, n) / 8 + 1);
  traits.from_float(x.data(), q.data(), n);
  std::vector<float> y(n, 1.0f);
  traits.to_float(q.data(), y.data(), n);
  if (IsGridType(GetParam())) {
    float largest = 0.0f;
    for (int64_t i = 0; i < kSuperBlockSize; ++i) largest = std::max(largest, std::fabs(x[i]));
    for (int64_t i = 32; i < 64; ++i) ASSERT_LE(std::fabs(y[i]), largest / 128) << i;
    return;
  }
  for (int64_t i = 32; i < 64; ++i) ASSERT_EQ(y[i], 0.0f) << i;
}

TEST_P(WeightTypeTest, ReferenceVecDotMatchesDequantizedDotProduct) {
  const TypeTraits& traits = *GetReferenceTypeTraits(GetParam());
  const ParityReport report = CheckVecDotParity(traits, traits.vec_dot);
  EXPECT_TRUE(report.ok) << report.failure;
  EXPECT_EQ(report.rows_checked, 72);
}

INSTANTIATE_TEST_SUITE_P(AllTypes, WeightTypeTest, testing::ValuesIn(kWeightTypes), TypeName);

}  // namespace
}  // namespace kvmesh::kernels
