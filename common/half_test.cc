#include "common/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace kvmesh {
namespace {

TEST(HalfTest, KnownValues) {
  EXPECT_EQ(FloatToHalf(0.0f), 0x0000);
  EXPECT_EQ(FloatToHalf(-0.0f), 0x8000);
  EXPECT_EQ(FloatToHalf(1.0f), 0x3c00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xc000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7bff);
  EXPECT_EQ(FloatToHalf(65520.0f), 0x7c00);  // rounds to inf
  EXPECT_EQ(FloatToHalf(std::numeric_limits<float>::infinity()), 0x7c00);
  EXPECT_EQ(FloatToHalf(5.9604645e-8f), 0x0001);     // smallest subnormal
  EXPECT_EQ(FloatToHalf(6.103515625e-05f), 0x0400);  // smallest normal
  EXPECT_EQ(HalfToFloat(0x3555), 0.333251953125f);
  EXPECT_EQ(HalfToFloat(0x0001), 5.9604644775390625e-8f);
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(std::nanf("")))));
}

TEST(HalfTest, RoundsToNearestEven) {
  // 1 + 2^-11 is exactly halfway between 1 and 1 + 2^-10: ties to even (1.0).
  EXPECT_EQ(FloatToHalf(1.0f + 0.00048828125f), 0x3c00);
  // 1 + 3*2^-11 is halfway between 0x3c01 and 0x3c02: ties to even (0x3c02).
  EXPECT_EQ(FloatToHalf(1.0f + 3 * 0.00048828125f), 0x3c02);
  // Just above halfway rounds up.
  EXPECT_EQ(FloatToHalf(std::nextafter(1.0f + 0.00048828125f, 2.0f)), 0x3c01);
  // Subnormal tie: 1.5 * 2^-24 → 2 * 2^-24 (even).
  EXPECT_EQ(FloatToHalf(1.5f * 5.9604645e-8f), 0x0002);
}

TEST(HalfTest, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t bits = static_cast<uint16_t>(h);
    const float f = HalfToFloat(bits);
    if (std::isnan(f)) continue;
    ASSERT_EQ(FloatToHalf(f), bits) << "half 0x" << std::hex << h;
  }
}

TEST(Bf16Test, RoundTripAndRounding) {
  EXPECT_EQ(FloatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(Bf16ToFloat(0x3f80), 1.0f);
  // 1 + 2^-8 is halfway between bf16 1.0 and 1 + 2^-7: ties to even.
  EXPECT_EQ(FloatToBf16(1.0f + 0.00390625f), 0x3f80);
  EXPECT_EQ(FloatToBf16(1.0f + 3 * 0.00390625f), 0x3f82);
  EXPECT_TRUE(std::isnan(Bf16ToFloat(FloatToBf16(std::nanf("")))));
}

}  // namespace
}  // namespace kvmesh
