// Q4_K, Q5_K, Q6_K, Q8_K: hand-built super-blocks decode to known values,
// Q2_K, Q3_K, IQ4_NL, IQ4_XS, IQ3_S, IQ3_XXS and IQ2_XS blocks decode as ggml decodes them,
// the Q8_K quantizer follows ggml's sign and rounding conventions, hand dot
// products come out exactly, and the weight quantizers beat the legacy types
// of the same width.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/reference_kernels.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {
namespace {

constexpr uint16_t kHalfOne = 0x3C00;
constexpr uint16_t kHalfHalf = 0x3800;
constexpr uint16_t kHalfQuarter = 0x3400;

// Same hand-packed pairs as k_quant_common_test.
constexpr int kScales[8] = {1, 2, 3, 63, 17, 33, 48, 63};
constexpr int kMins[8] = {0, 5, 10, 62, 16, 31, 47, 1};
constexpr uint8_t kPacked[12] = {0x41, 0x82, 0xC3, 0xFF, 0x40, 0x45,
                                 0x8A, 0x3E, 0x01, 0xF1, 0xF0, 0x1F};

std::vector<float> Decode(TensorType type, const void* blocks, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n));
  GetReferenceTypeTraits(type)->to_float(blocks, out.data(), n);
  return out;
}

// d = 1, dmin = 0.5, pairs above; element e has level (e / 4) % 16, which
// puts 0..7 in the low nibbles and 8..15 in the high nibbles.
BlockQ4_K HandQ4_K() {
  BlockQ4_K block;
  block.d = kHalfOne;
  block.dmin = kHalfHalf;
  std::memcpy(block.scales, kPacked, 12);
  for (int chunk = 0; chunk < 4; ++chunk) {
    for (int l = 0; l < 32; ++l) {
      block.qs[32 * chunk + l] = static_cast<uint8_t>(l / 4 | (8 + l / 4) << 4);
    }
  }
  return block;
}

TEST(Q4_KTest, DequantizesHandBlock) {
  const BlockQ4_K block = HandQ4_K();
  const std::vector<float> y = Decode(TensorType::kQ4_K, &block, 256);
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_EQ(y[37], 15.5f);    // sub-block 1: 2 * 9 - 0.5 * 5
  EXPECT_EQ(y[130], -8.0f);   // sub-block 4: 17 * 0 - 0.5 * 16
  EXPECT_EQ(y[200], 72.5f);   // sub-block 6: 48 * 2 - 0.5 * 47
  EXPECT_EQ(y[255], 944.5f);  // sub-block 7: 63 * 15 - 0.5 * 1
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32;
    EXPECT_EQ(y[e], static_cast<float>(kScales[j] * ((e / 4) % 16)) - 0.5f * kMins[j]) << e;
  }
}

TEST(Q4_KTest, VecDotOfHandBlocks) {
  const BlockQ4_K w = HandQ4_K();
  BlockQ8_K x;
  x.d = 0.5f;
  std::memset(x.qs, 1, sizeof x.qs);
  for (int16_t& s : x.bsums) s = 16;
  // 0.5 * sum(y) = 0.5 * (sum_j scale_j * level_sum_j - 16 * sum_j min_j)
  //             = 0.5 * (66976 - 2752)
  EXPECT_EQ(VecDotQ4_KQ8_K(256, &w, &x), 32112.0f);
}

TEST(Q5_KTest, DequantizesHandBlock) {
  BlockQ5_K block;
  block.d = kHalfOne;
  block.dmin = kHalfOne;
  // scale 1 and min j for every sub-block j.
  const uint8_t packed[12] = {1, 1, 1, 1, 0, 1, 2, 3, 0x41, 0x51, 0x61, 0x71};
  std::memcpy(block.scales, packed, 12);
  for (int chunk = 0; chunk < 4; ++chunk) {
    for (int l = 0; l < 32; ++l) {
      block.qs[32 * chunk + l] = static_cast<uint8_t>(l % 16 | (15 - l % 16) << 4);
    }
  }
  // Fifth bit for sub-blocks 0, 2, 5, 7, at even positions only.
  for (int l = 0; l < 32; ++l) block.qh[l] = l % 2 == 0 ? 0xA5 : 0x00;
  const std::vector<float> y = Decode(TensorType::kQ5_K, &block, 256);
  EXPECT_EQ(y[0], 16.0f);  // level 0 | 16, min 0
  EXPECT_EQ(y[1], 1.0f);
  EXPECT_EQ(y[33], 13.0f);   // sub-block 1 (high nibbles): 14 - 1
  EXPECT_EQ(y[64], 14.0f);   // sub-block 2: 16 - 2
  EXPECT_EQ(y[160], 26.0f);  // sub-block 5: 15 | 16 - 5
  EXPECT_EQ(y[254], 10.0f);  // sub-block 7: 1 | 16 - 7
  EXPECT_EQ(y[255], -7.0f);  // sub-block 7: 0 - 7
  for (int e = 0; e < 256; ++e) {
    const int j = e / 32, l = e % 32;
    const int nibble = j % 2 == 0 ? l % 16 : 15 - l % 16;
    const int high = (l % 2 == 0 && ((0xA5 >> j) & 1)) ? 16 : 0;
    EXPECT_EQ(y[e], static_cast<float>(nibble + high - j)) << e;
  }
}

// d = 0.25, scales[j] = j - 8. Every quarter of 32 shares one level:
// half 0: 1, 19, 34, 52; half 1: 49, 35, 18, 4 (minus 32 when decoded).
BlockQ6_K HandQ6_K() {
  BlockQ6_K block;
  block.d = kHalfQuarter;
  for (int j = 0; j < 16; ++j) block.scales[j] = static_cast<int8_t>(j - 8);
  for (int half = 0; half < 2; ++half) {
    for (int l = 0; l < 32; ++l) {
      block.ql[64 * half + l] = 0x21;                     // quarter 0 low 1, quarter 2 low 2
      block.ql[64 * half + 32 + l] = 0x43;                // quarter 1 low 3, quarter 3 low 4
      block.qh[32 * half + l] = half == 0 ? 0xE4 : 0x1B;  // top bits 0,1,2,3 / 3,2,1,0
    }
  }
  return block;
}

TEST(Q6_KTest, DequantizesHandBlock) {
  const BlockQ6_K block = HandQ6_K();
  const std::vector<float> y = Decode(TensorType::kQ6_K, &block, 256);
  EXPECT_EQ(y[0], 62.0f);     // 0.25 * -8 * -31
  EXPECT_EQ(y[40], 19.5f);    // 0.25 * -6 * -13
  EXPECT_EQ(y[70], -2.0f);    // 0.25 * -4 * 2
  EXPECT_EQ(y[127], -5.0f);   // 0.25 * -1 * 20
  EXPECT_EQ(y[136], 0.0f);    // scale 0
  EXPECT_EQ(y[144], 4.25f);   // 0.25 * 1 * 17
  EXPECT_EQ(y[255], -49.0f);  // 0.25 * 7 * -28
  const int centered[8] = {-31, -13, 2, 20, 17, 3, -14, -28};
  for (int e = 0; e < 256; ++e) {
    EXPECT_EQ(y[e], 0.25f * static_cast<float>((e / 16 - 8) * centered[e / 32])) << e;
  }
}

TEST(Q6_KTest, VecDotOfHandBlocksIsExact) {
  const BlockQ6_K w = HandQ6_K();
  BlockQ8_K x;
  x.d = 0.25f;
  std::memset(x.qs, 2, sizeof x.qs);  // every activation 0.5
  for (int16_t& s : x.bsums) s = 32;
  const std::vector<float> y = Decode(TensorType::kQ6_K, &w, 256);
  double expected = 0.0;
  for (float v : y) expected += 0.5 * v;
  EXPECT_EQ(VecDotQ6_KQ8_K(256, &w, &x), static_cast<float>(expected));
  EXPECT_EQ(expected, 152.0);
}

TEST(Q8_KTest, QuantizerFollowsGgmlSignAndRounding) {
  std::vector<float> x(256, 0.0f);
  x[0] = 127.0f;   // largest magnitude, positive: scale = -1
  x[1] = 2.5f;     // -2.5 -> -2 (ties to even)
  x[2] = -3.5f;    // 3.5 -> 4
  x[3] = -127.0f;  // 127
  x[4] = 1.5f;     // -1.5 -> -2
  x[5] = 10.0f;    // -10
  x[16] = 3.0f;    // -3, second group of 16
  BlockQ8_K block;
  QuantizeRowQ8_K(x.data(), &block, 256);
  EXPECT_EQ(block.d, -1.0f);
  const int8_t expected[6] = {-127, -2, 4, 127, -2, -10};
  for (int j = 0; j < 6; ++j) EXPECT_EQ(block.qs[j], expected[j]) << j;
  EXPECT_EQ(block.qs[16], -3);
  EXPECT_EQ(block.bsums[0], -10);
  EXPECT_EQ(block.bsums[1], -3);
  for (int g = 2; g < 16; ++g) EXPECT_EQ(block.bsums[g], 0) << g;

  const std::vector<float> y = Decode(TensorType::kQ8_K, &block, 256);
  EXPECT_EQ(y[0], 127.0f);
  EXPECT_EQ(y[1], 2.0f);
  EXPECT_EQ(y[2], -4.0f);
}

TEST(Q8_KTest, ZeroBlock) {
  std::vector<float> x(256, 0.0f);
  BlockQ8_K block;
  std::memset(&block, 0x7F, sizeof block);
  QuantizeRowQ8_K(x.data(), &block, 256);
  EXPECT_EQ(block.d, 0.0f);
  for (int8_t q : block.qs) EXPECT_EQ(q, 0);
  for (int16_t s : block.bsums) EXPECT_EQ(s, 0);
}

double RelativeRmsError(TensorType type, const std::vector<float>& x) {
  const TypeTraits& traits = *GetReferenceTypeTraits(type);
  const int64_t n = static_cast<int64_t>(x.size());
  std::vector<uint64_t> q(RowSizeBytes(traits, n) / 8 + 1);
  traits.from_float(x.data(), q.data(), n);
  const std::vector<float> y = Decode(type, q.data(), n);
  double error = 0.0, signal = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    error += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    signal += static_cast<double>(x[i]) * x[i];
  }
  return std::sqrt(error / signal);
}

// On rows shaped like real weights (magnitudes changing per block, outliers)
// the K types, whose scale search spends the same bits more carefully, must
// beat the legacy types of the same width.
TEST(KQuantQualityTest, BeatsLegacyTypesOfTheSameWidth) {
  TestRandom rng(11);
  const std::vector<float> x = MakeTestRow(rng, 8192);
  const double q4_1 = RelativeRmsError(TensorType::kQ4_1, x);
  const double q4_k = RelativeRmsError(TensorType::kQ4_K, x);
  const double q5_1 = RelativeRmsError(TensorType::kQ5_1, x);
  const double q5_k = RelativeRmsError(TensorType::kQ5_K, x);
  const double q6_k = RelativeRmsError(TensorType::kQ6_K, x);
  EXPECT_LT(q4_k, q4_1);
  EXPECT_LT(q5_k, q5_1);
  EXPECT_LT(q6_k, q5_k);
}

TEST(KQuantQualityTest, ConstantRowsAreNearlyExact) {
  for (TensorType type : {TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    for (float value : {0.3f, -0.3f}) {
      const std::vector<float> x(256, value);
      EXPECT_LT(RelativeRmsError(type, x), 1e-3) << TensorTypeName(type) << " " << value;
    }
  }
}

// Q2_K, Q3_K, IQ4_NL, IQ4_XS and the grid types IQ3_S, IQ3_XXS, IQ2_XS: a
// block of pseudo-random bytes (every field but the f16 scales) decodes to
// the values ggml's own decoder gives for the same bytes (recorded from a native llama.cpp build's
// libggml-base; the full check is bench/ggml_format_check.sh). This pins every bit position of the
// formats, which a quantize-then-decode test cannot.
struct GoldenValue {
  int element;
  float value;
};

std::vector<uint8_t> PseudoRandomBlock(int bytes, int half_at, int halves) {
  std::vector<uint8_t> block(static_cast<size_t>(bytes));
  uint32_t state = 12345;
  for (uint8_t& b : block) {
    state = state * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(state >> 24);
  }
  const uint16_t scales[2] = {0x3000, 0x2C00};  // 0.125, 0.0625
  std::memcpy(block.data() + half_at, scales, 2 * static_cast<size_t>(halves));
  return block;
}

void ExpectGolden(TensorType type, int bytes, int half_at, int halves, int64_t n,
                  const std::vector<GoldenValue>& golden) {
  const std::vector<uint8_t> block = PseudoRandomBlock(bytes, half_at, halves);
  const std::vector<float> y = Decode(type, block.data(), n);
  for (const GoldenValue& g : golden) {
    EXPECT_EQ(y[g.element], g.value) << TensorTypeName(type) << " element " << g.element;
  }
}

TEST(LowBitTypesTest, DecodeAsGgmlDoes) {
  ExpectGolden(TensorType::kQ2_K, 84, 80, 2, 256,
               {{0, 0.625f},
                {1, 0.625f},
                {5, 0.625f},
                {15, 0.625f},
                {16, 1.0f},
                {17, 1.0f},
                {31, 0.0f},
                {32, 0.875f},
                {47, -0.5f},
                {63, -0.375f},
                {64, 1.125f},
                {100, 4.8125f},
                {127, 4.0f},
                {128, 0.4375f},
                {150, 1.25f},
                {191, 4.5625f},
                {200, 1.6875f},
                {224, -0.3125f},
                {255, 0.1875f}});
  ExpectGolden(TensorType::kQ3_K, 110, 108, 1, 256,
               {{0, 1.5f},
                {1, -1.5f},
                {5, -0.75f},
                {15, 0.0f},
                {16, 2.875f},
                {17, 2.875f},
                {31, 0.0f},
                {32, -10.125f},
                {47, -10.125f},
                {63, 12.0f},
                {64, -0.75f},
                {100, -0.0f},
                {127, -10.0f},
                {128, 3.5f},
                {150, -7.0f},
                {191, -8.25f},
                {200, -6.75f},
                {224, 4.5f},
                {255, -3.0f}});
  ExpectGolden(TensorType::kIQ4_NL, 18, 0, 1, 32,
               {{0, 4.75f},
                {1, -10.375f},
                {5, 6.625f},
                {15, -4.375f},
                {16, 0.125f},
                {17, 3.125f},
                {31, 14.125f}});
  ExpectGolden(TensorType::kIQ4_XS, 136, 0, 1, 256,
               {{0, 3.0f},
                {1, 3.0f},
                {5, -249.0f},
                {15, 339.0f},
                {16, 39.0f},
                {17, 159.0f},
                {31, -30.0f},
                {32, 22.75f},
                {47, -145.25f},
                {63, -61.25f},
                {64, 122.5f},
                {100, -6.125f},
                {127, -2.75f},
                {128, 197.75f},
                {150, 120.75f},
                {191, 68.75f},
                {200, -33.0f},
                {224, 25.0f},
                {255, 53.0f}});
  ExpectGolden(TensorType::kIQ3_S, 110, 0, 1, 256,
               {{0, -16.875f},
                {1, 13.125f},
                {5, 28.125f},
                {15, 13.125f},
                {16, 5.625f},
                {17, 13.125f},
                {31, -9.375f},
                {32, 0.375f},
                {47, 1.875f},
                {63, -5.625f},
                {64, -9.375f},
                {100, 31.625f},
                {127, 2.875f},
                {128, 16.875f},
                {150, 16.875f},
                {191, -10.125f},
                {200, 3.875f},
                {224, -6.375f},
                {255, -14.875f}});
  ExpectGolden(TensorType::kIQ3_XXS, 98, 0, 1, 256,
               {{0, -6.875f},
                {1, -5.625f},
                {5, 4.375f},
                {15, -0.625f},
                {16, -0.625f},
                {17, -1.875f},
                {31, -6.875f},
                {32, 20.125f},
                {47, 2.875f},
                {63, 44.5625f},
                {64, -43.875f},
                {100, -31.625f},
                {127, -8.625f},
                {128, -39.875f},
                {150, 25.375f},
                {191, -3.375f},
                {200, -11.875f},
                {224, -48.4375f},
                {255, 9.375f}});
  ExpectGolden(TensorType::kIQ2_XS, 74, 0, 1, 256,
               {{0, -8.984375f},
                {1, 8.984375f},
                {5, 2.875f},
                {15, -2.875f},
                {16, 4.296875f},
                {17, -1.375f},
                {31, -1.375f},
                {32, -15.453125f},
                {47, 2.875f},
                {63, -9.765625f},
                {64, -8.984375f},
                {100, -3.375f},
                {127, -0.625f},
                {128, -3.625f},
                {150, 0.375f},
                {191, 5.078125f},
                {200, -12.109375f},
                {224, -12.765625f},
                {255, -15.453125f}});
}

}  // namespace
}  // namespace kvmesh::kernels
