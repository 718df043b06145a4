// F32 / F16 / BF16 rows through the traits table: conversions round to
// nearest even, every finite value round-trips, and dot products use the
// rounded activations with a double accumulator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "common/half.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {
namespace {

uint16_t ToF16(float x) {
  uint16_t h;
  GetTypeTraits(TensorType::kF16)->from_float(&x, &h, 1);
  return h;
}

uint16_t ToBf16(float x) {
  uint16_t b;
  GetTypeTraits(TensorType::kBF16)->from_float(&x, &b, 1);
  return b;
}

TEST(F16Test, RoundsToNearestEven) {
  EXPECT_EQ(ToF16(1.0f), 0x3C00);
  EXPECT_EQ(ToF16(-2.0f), 0xC000);
  EXPECT_EQ(ToF16(1.0f + 0x1p-11f), 0x3C00);             // tie, even neighbour below
  EXPECT_EQ(ToF16(1.0f + 3 * 0x1p-11f), 0x3C02);         // tie, even neighbour above
  EXPECT_EQ(ToF16(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // just above the tie
  EXPECT_EQ(ToF16(65504.0f), 0x7BFF);                    // largest finite half
  EXPECT_EQ(ToF16(65520.0f), 0x7C00);                    // rounds up to infinity
  EXPECT_EQ(ToF16(0x1p-24f), 0x0001);                    // smallest subnormal
  EXPECT_EQ(ToF16(0x1p-25f), 0x0000);                    // tie between 0 and it: even
  EXPECT_EQ(ToF16(3 * 0x1p-25f), 0x0002);                // tie between 1 and 2 ulps
}

TEST(F16Test, EveryFiniteHalfRoundTrips) {
  const TypeTraits& traits = *GetTypeTraits(TensorType::kF16);
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7C00) == 0x7C00) continue;  // inf / nan
    const uint16_t h = static_cast<uint16_t>(bits);
    float f;
    traits.to_float(&h, &f, 1);
    ASSERT_EQ(ToF16(f), h) << std::hex << bits;
  }
}

TEST(Bf16Test, RoundsToNearestEven) {
  EXPECT_EQ(ToBf16(1.0f), 0x3F80);
  EXPECT_EQ(ToBf16(1.0f + 0x1p-8f), 0x3F80);             // tie, even below
  EXPECT_EQ(ToBf16(1.0f + 3 * 0x1p-8f), 0x3F82);         // tie, even above
  EXPECT_EQ(ToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);  // just above the tie
  EXPECT_EQ(ToBf16(-3.0f), 0xC040);
}

TEST(Bf16Test, EveryFiniteBf16RoundTrips) {
  const TypeTraits& traits = *GetTypeTraits(TensorType::kBF16);
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    if ((bits & 0x7F80) == 0x7F80) continue;  // inf / nan
    const uint16_t b = static_cast<uint16_t>(bits);
    float f;
    traits.to_float(&b, &f, 1);
    ASSERT_EQ(ToBf16(f), b) << std::hex << bits;
  }
}

TEST(F32Test, VecDotAccumulatesInDouble) {
  // A float accumulator would lose the 1 against 1e8.
  const float w[] = {1e8f, 1.0f, -1e8f};
  const float x[] = {1.0f, 1.0f, 1.0f};
  EXPECT_EQ(GetTypeTraits(TensorType::kF32)->vec_dot(3, w, x), 1.0f);
}

TEST(F16Test, VecDotOfHandValues) {
  const uint16_t w[] = {ToF16(1.5f), ToF16(-2.0f), ToF16(0.25f)};
  const uint16_t x[] = {ToF16(2.0f), ToF16(3.0f), ToF16(4.0f)};
  EXPECT_EQ(GetTypeTraits(TensorType::kF16)->vec_dot(3, w, x), -2.0f);
}

TEST(F16Test, ActivationsAreRoundedToF16BeforeTheDot) {
  const TypeTraits& traits = *GetTypeTraits(TensorType::kF16);
  ASSERT_EQ(traits.vec_dot_type, TensorType::kF16);
  const float activation = 1.0f + 0x1p-12f;  // not representable in f16
  uint16_t x;
  traits.from_float(&activation, &x, 1);
  const uint16_t w = ToF16(1.0f);
  EXPECT_EQ(traits.vec_dot(1, &w, &x), 1.0f);
}

TEST(Bf16Test, VecDotUsesRoundedActivations) {
  const TypeTraits& traits = *GetTypeTraits(TensorType::kBF16);
  const float activations[] = {1.0f + 0x1p-9f, 2.0f};
  uint16_t x[2];
  traits.from_float(activations, x, 2);
  const uint16_t w[] = {ToBf16(1.0f), ToBf16(-0.5f)};
  EXPECT_EQ(traits.vec_dot(2, w, x), 0.0f);
}

}  // namespace
}  // namespace kvmesh::kernels
