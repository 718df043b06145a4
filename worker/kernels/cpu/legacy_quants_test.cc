// Q4_0, Q3_NL, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1: hand-built blocks decode to known
// values, the reference quantizers produce known bytes, and hand-computed dot
// products come out exactly.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/reference_kernels.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {
namespace {

// f16 bit patterns used below.
constexpr uint16_t kHalfOne = 0x3C00;
constexpr uint16_t kHalfHalf = 0x3800;     // 0.5
constexpr uint16_t kHalfQuarter = 0x3400;  // 0.25
constexpr uint16_t kHalfMinus3 = 0xC200;
constexpr uint16_t kHalfMinus4 = 0xC400;

std::vector<float> Decode(TensorType type, const void* blocks, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  GetReferenceTypeTraits(type)->to_float(blocks, out.data(), n);
  return out;
}

// Quantizes with the type's from_float, dequantizes, and expects `x` back
// bit for bit (x must lie on the type's grid).
void ExpectExactRoundTrip(TensorType type, const std::vector<float>& x) {
  const TypeTraits& traits = *GetReferenceTypeTraits(type);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint64_t> q(RowSizeBytes(traits, n) / 8 + 1);
  traits.from_float(x.data(), q.data(), n);
  const std::vector<float> y = Decode(type, q.data(), n);
  for (int64_t i = 0; i < n; ++i) EXPECT_EQ(y[i], x[i]) << TensorTypeName(type) << " " << i;
}

BlockQ4_0 HandQ4_0() {
  BlockQ4_0 block;
  block.d = kHalfHalf;
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  return block;
}

TEST(Q4_0Test, DequantizesHandBlock) {
  const BlockQ4_0 block = HandQ4_0();
  const std::vector<float> y = Decode(TensorType::kQ4_0, &block, 32);
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[8], 0.0f);
  EXPECT_EQ(y[15], 3.5f);
  EXPECT_EQ(y[16], 3.5f);
  EXPECT_EQ(y[31], -4.0f);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * static_cast<float>(j - 8));
    EXPECT_EQ(y[j + 16], 0.5f * static_cast<float>(7 - j));
  }
}

TEST(Q4_0Test, QuantizerMapsLargestMagnitudeToLevelZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = -8.0f;   // largest magnitude: d = -8 / -8 = 1
  x[1] = 7.0f;    // level 15
  x[2] = 0.5f;    // 8.5 + 0.5 truncates to 9
  x[3] = -0.5f;   // 8
  x[4] = 7.9f;    // 16, clamped to 15
  x[5] = 3.49f;   // 11
  x[16] = -3.0f;  // 5, high nibble of byte 0
  BlockQ4_0 block;
  QuantizeRowQ4_0(x.data(), &block, 32);
  EXPECT_EQ(block.d, kHalfOne);
  const uint8_t expected[16] = {0x50, 0x8F, 0x89, 0x88, 0x8F, 0x8B, 0x88, 0x88,
                                0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88};
  EXPECT_EQ(std::memcmp(block.qs, expected, 16), 0);

  x[0] = 8.0f;  // now positive: d = -1 and every level mirrors
  QuantizeRowQ4_0(x.data(), &block, 32);
  EXPECT_EQ(block.d, 0xBC00);
  EXPECT_EQ(block.qs[0] & 0x0F, 0);
  EXPECT_EQ(block.qs[1] & 0x0F, 1);  // 7 -> -7 + 8.5 = 1.5 -> 1
  EXPECT_EQ(block.qs[0] >> 4, 11);   // -3 -> 3 + 8.5 -> 11
}

TEST(Q4_0Test, VecDotOfHandBlocks) {
  const BlockQ4_0 w = HandQ4_0();
  BlockQ8_0 x;
  x.d = kHalfQuarter;
  std::memset(x.qs, 2, sizeof x.qs);  // every activation 0.5
  // sum of the weights is -8, times 0.5.
  EXPECT_EQ(VecDotQ4_0Q8_0(32, &w, &x), -4.0f);
}

// Byte 0 of ql holds the low code bits of elements 0, 8, 16 and 24 (0, 1, 2,
// 3); bit 8 of qh is element 8's high bit and bit 31 element 31's. Every other
// element has code 0.
BlockQ3_NL HandQ3_NL() {
  BlockQ3_NL block;
  block.d = kHalfHalf;
  std::memset(block.ql, 0, sizeof block.ql);
  std::memset(block.qh, 0, sizeof block.qh);
  block.ql[0] = 0xE4;
  block.qh[1] = 0x01;
  block.qh[3] = 0x80;
  return block;
}

TEST(Q3_NLTest, DequantizesHandBlock) {
  const BlockQ3_NL block = HandQ3_NL();
  const std::vector<float> y = Decode(TensorType::kQ3_NL, &block, 32);
  for (int j = 0; j < 32; ++j) {
    float expected = -63.5f;         // code 0: -127 * 0.5
    if (j == 8) expected = 22.5f;    // code 5: 45
    if (j == 16) expected = -22.5f;  // code 2: -45
    if (j == 24) expected = -7.0f;   // code 3: -14
    if (j == 31) expected = 7.0f;    // code 4: 14
    EXPECT_EQ(y[j], expected) << j;
  }
}

// Values on the grid come back exactly, whatever their codes' positions, and
// the encoder packs them as the hand block does.
TEST(Q3_NLTest, QuantizerKeepsValuesOnTheGrid) {
  const BlockQ3_NL hand = HandQ3_NL();
  const std::vector<float> x = Decode(TensorType::kQ3_NL, &hand, 32);
  ExpectExactRoundTrip(TensorType::kQ3_NL, x);
  BlockQ3_NL block;
  QuantizeRowQ3_NL(x.data(), &block, 32);
  EXPECT_EQ(std::memcmp(&block, &hand, sizeof block), 0);

  std::vector<float> every(64);
  for (int j = 0; j < 64; ++j) every[j] = -0.25f * kQ3NlLevels[(3 * j + j / 8) % 8];
  ExpectExactRoundTrip(TensorType::kQ3_NL, every);
}

TEST(Q3_NLTest, VecDotOfHandBlocks) {
  const BlockQ3_NL w = HandQ3_NL();
  BlockQ8_0 x;
  x.d = kHalfQuarter;
  std::memset(x.qs, 2, sizeof x.qs);  // every activation 0.5
  // 28 elements of code 0 (-63.5) and four that cancel in pairs.
  EXPECT_EQ(VecDotQ3_NLQ8_0(32, &w, &x), -889.0f);
}

TEST(Q4_1Test, DequantizesHandBlock) {
  BlockQ4_1 block;
  block.d = kHalfHalf;
  block.m = kHalfMinus4;
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const std::vector<float> y = Decode(TensorType::kQ4_1, &block, 32);
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[15], 3.5f);
  EXPECT_EQ(y[16], 3.5f);
  EXPECT_EQ(y[31], -4.0f);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(y[j], 0.5f * static_cast<float>(j) - 4.0f);
}

TEST(Q4_1Test, VecDotUsesCachedActivationSum) {
  BlockQ4_1 w;
  w.d = kHalfHalf;
  w.m = kHalfMinus4;
  for (int j = 0; j < 16; ++j) w.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  BlockQ8_1 x;
  x.d = kHalfQuarter;
  std::memset(x.qs, 2, sizeof x.qs);
  x.s = 0x4C00;  // 16 = 0.25 * 64
  // 0.5 * 0.25 * (sum of levels 240 * 2) + (-4) * 16
  EXPECT_EQ(VecDotQ4_1Q8_1(32, &w, &x), -4.0f);
  x.s = 0x4A00;  // 12: the kernel trusts s, not the levels
  EXPECT_EQ(VecDotQ4_1Q8_1(32, &w, &x), 12.0f);
}

TEST(Q5_0Test, DequantizesHandBlock) {
  BlockQ5_0 block;
  block.d = kHalfOne;
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  // Fifth bit: even elements of the first half, odd elements of the second.
  const uint8_t qh[4] = {0x55, 0x55, 0xAA, 0xAA};
  std::memcpy(block.qh, qh, 4);
  const std::vector<float> y = Decode(TensorType::kQ5_0, &block, 32);
  EXPECT_EQ(y[0], 0.0f);    // 0 | 16 -> 16 - 16
  EXPECT_EQ(y[1], -15.0f);  // 1
  EXPECT_EQ(y[14], 14.0f);  // 14 | 16
  EXPECT_EQ(y[15], -1.0f);  // 15
  EXPECT_EQ(y[16], -1.0f);  // 15
  EXPECT_EQ(y[17], 14.0f);  // 14 | 16
  EXPECT_EQ(y[31], 0.0f);   // 0 | 16
}

TEST(Q5_0Test, QuantizerStoresFifthBitsLittleEndian) {
  std::vector<float> x(32);
  for (int j = 0; j < 32; ++j) x[j] = static_cast<float>(j - 16);  // level j
  BlockQ5_0 block;
  QuantizeRowQ5_0(x.data(), &block, 32);
  EXPECT_EQ(block.d, kHalfOne);
  const uint8_t expected_qh[4] = {0x00, 0x00, 0xFF, 0xFF};
  EXPECT_EQ(std::memcmp(block.qh, expected_qh, 4), 0);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(block.qs[j], 0x11 * j) << j;
}

TEST(Q5_1Test, DequantizesHandBlock) {
  BlockQ5_1 block;
  block.d = kHalfHalf;
  block.m = kHalfMinus3;
  for (int j = 0; j < 16; ++j) block.qs[j] = static_cast<uint8_t>(j | (15 - j) << 4);
  const uint8_t qh[4] = {0x55, 0x55, 0xAA, 0xAA};
  std::memcpy(block.qh, qh, 4);
  const std::vector<float> y = Decode(TensorType::kQ5_1, &block, 32);
  EXPECT_EQ(y[0], 5.0f);    // 16 * 0.5 - 3
  EXPECT_EQ(y[1], -2.5f);   // 1
  EXPECT_EQ(y[17], 12.0f);  // 30
  EXPECT_EQ(y[31], 5.0f);   // 16
}

TEST(Q8_0Test, DequantizesHandBlock) {
  BlockQ8_0 block;
  block.d = kHalfQuarter;
  for (int j = 0; j < 32; ++j) block.qs[j] = static_cast<int8_t>(j - 16);
  block.qs[0] = -128;
  block.qs[31] = 127;
  const std::vector<float> y = Decode(TensorType::kQ8_0, &block, 32);
  EXPECT_EQ(y[0], -32.0f);
  EXPECT_EQ(y[1], -3.75f);
  EXPECT_EQ(y[16], 0.0f);
  EXPECT_EQ(y[30], 3.5f);
  EXPECT_EQ(y[31], 31.75f);
}

TEST(Q8_0Test, QuantizerRoundsHalvesAwayFromZero) {
  std::vector<float> x(32, 0.0f);
  x[0] = 127.0f;  // amax: d = 1
  x[1] = 2.5f;
  x[2] = -2.5f;
  x[3] = 0.49f;
  x[4] = -127.0f;
  BlockQ8_0 block;
  QuantizeRowQ8_0(x.data(), &block, 32);
  EXPECT_EQ(block.d, kHalfOne);
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], 3);
  EXPECT_EQ(block.qs[2], -3);
  EXPECT_EQ(block.qs[3], 0);
  EXPECT_EQ(block.qs[4], -127);
}

TEST(Q8_0Test, LevelsUseTheUnroundedScale) {
  // amax 100: d = 100/127 = 0.787402 is stored as f16 0x3A4D (0.787598), but
  // levels come from the exact d. 79.142 / 0.787402 = 100.510 -> 101, whereas
  // the stored d would give 100.485 -> 100.
  std::vector<float> x(32, 0.0f);
  x[0] = 100.0f;
  x[1] = 79.142f;
  BlockQ8_0 block;
  QuantizeRowQ8_0(x.data(), &block, 32);
  EXPECT_EQ(block.d, 0x3A4D);
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.qs[1], 101);
}

TEST(Q8_1Test, QuantizerCachesScaledLevelSum) {
  std::vector<float> x(32, 0.0f);
  x[0] = -127.0f;  // amax: d = 1
  x[1] = 2.5f;     // 3
  x[2] = -0.5f;    // -1
  x[3] = 100.4f;   // 100
  BlockQ8_1 block;
  QuantizeRowQ8_1(x.data(), &block, 32);
  EXPECT_EQ(block.d, kHalfOne);
  EXPECT_EQ(block.qs[0], -127);
  EXPECT_EQ(block.qs[1], 3);
  EXPECT_EQ(block.qs[2], -1);
  EXPECT_EQ(block.qs[3], 100);
  EXPECT_EQ(block.s, 0xCE40);  // -25
}

TEST(Q8_1Test, SumUsesTheUnroundedScale) {
  // d = 100.125/127 is stored as f16 0.789551; nine levels of 127 give
  // s = 1143 * d = 901.125 -> f16 901 (0x630A). The stored d would give
  // 901.34 -> 901.5 (0x630B).
  std::vector<float> x(32, 0.0f);
  for (int j = 0; j < 9; ++j) x[j] = 100.125f;
  BlockQ8_1 block;
  QuantizeRowQ8_1(x.data(), &block, 32);
  EXPECT_EQ(block.qs[0], 127);
  EXPECT_EQ(block.s, 0x630A);
}

TEST(LegacyQuantsTest, GridValuesRoundTripExactly) {
  std::vector<float> x(64);
  for (int j = 0; j < 64; ++j) x[j] = static_cast<float>(j % 16 - 8);
  ExpectExactRoundTrip(TensorType::kQ4_0, x);
  for (int j = 0; j < 64; ++j) x[j] = static_cast<float>(j % 16 - 4);
  ExpectExactRoundTrip(TensorType::kQ4_1, x);
  for (int j = 0; j < 64; ++j) x[j] = static_cast<float>(j % 32 - 16);
  ExpectExactRoundTrip(TensorType::kQ5_0, x);
  for (int j = 0; j < 64; ++j) x[j] = static_cast<float>(j % 32 - 10);
  ExpectExactRoundTrip(TensorType::kQ5_1, x);
  // -127 then -122, -118, ..., -2: amax 127 in both blocks, so d = 1.
  for (int j = 0; j < 64; ++j) {
    x[j] = static_cast<float>(4 * (j % 32) - 127 + (j % 32 == 0 ? 0 : 1));
  }
  ExpectExactRoundTrip(TensorType::kQ8_0, x);
}

}  // namespace
}  // namespace kvmesh::kernels
