// The CUDA kernels' per-block arithmetic (block_math.h), compiled for the CPU
// and checked against the CPU reference kernels. Runs on every build, with or
// without CUDA: it is what a machine without a GPU can prove about the
// device code.
#include "worker/kernels/cuda/block_math.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "common/half.h"
#include "worker/kernels/cpu/type_traits.h"
#include "worker/kv/kv_layout.h"
#include "worker/kv/kv_transform.h"
#include "worker/runtime/cpu/kv_quantizer.h"

namespace kvmesh::cuda {
namespace {

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

TEST(BlockMathTest, HalfConversionsMatchTheCpu) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const uint16_t v = static_cast<uint16_t>(h);
    ASSERT_EQ(Bits(HalfToFloat(v)), Bits(kvmesh::HalfToFloat(v))) << h;
    ASSERT_EQ(Bits(Bf16ToFloat(v)), Bits(kvmesh::Bf16ToFloat(v))) << h;
  }
  std::mt19937 rng(1);
  for (int i = 0; i < 2'000'000; ++i) {
    // Every float bit pattern class: normals, subnormals, halfway cases.
    const uint32_t bits = i % 4 == 0 ? (rng() & 0x807fffffu) | 0x38000000u : rng();
    float f;
    std::memcpy(&f, &bits, 4);
    ASSERT_EQ(FloatToHalf(f), kvmesh::FloatToHalf(f)) << std::hex << bits;
    ASSERT_EQ(FloatToBf16(f), kvmesh::FloatToBf16(f)) << std::hex << bits;
  }
}

std::vector<float> RandomRow(int64_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  // A few outliers, as real weights and keys have.
  for (int64_t i = 0; i < n; i += 97) x[i] *= 6.0f;
  return x;
}

std::vector<uint8_t> Quantize(TensorType type, const std::vector<float>& x) {
  const kernels::TypeTraits* t = kernels::GetReferenceTypeTraits(type);
  std::vector<uint8_t> row(kernels::RowSizeBytes(*t, static_cast<int64_t>(x.size())));
  t->from_float(x.data(), row.data(), static_cast<int64_t>(x.size()));
  return row;
}

template <TensorType T>
void CheckRowElement() {
  const int64_t n = 1024;
  const std::vector<uint8_t> row = Quantize(T, RandomRow(n, 7));
  std::vector<float> want(n);
  kernels::GetReferenceTypeTraits(T)->to_float(row.data(), want.data(), n);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(Bits(RowElement<T>(row.data(), i)), Bits(want[i]))
        << TensorTypeName(T) << " element " << i;
  }
}

TEST(BlockMathTest, RowElementIsBitExactWithToFloat) {
  CheckRowElement<TensorType::kF32>();
  CheckRowElement<TensorType::kF16>();
  CheckRowElement<TensorType::kBF16>();
  CheckRowElement<TensorType::kQ8_0>();
  CheckRowElement<TensorType::kQ4_0>();
  CheckRowElement<TensorType::kQ3_NL>();
  CheckRowElement<TensorType::kQ4_K>();
  CheckRowElement<TensorType::kQ5_K>();
  CheckRowElement<TensorType::kQ6_K>();
}

TEST(BlockMathTest, QuantizedActivationsAreWithinHalfAStep) {
  const std::vector<float> x = RandomRow(kGroup * 64, 3, 2.0f);
  for (int g = 0; g < 64; ++g) {
    ActQ8 a;
    QuantizeAct(&x[g * kGroup], &a);
    int sum = 0;
    for (int j = 0; j < kGroup; ++j) {
      EXPECT_LE(std::fabs(x[g * kGroup + j] - a.d * a.qs[j]), a.d * 0.5f * 1.0001f);
      sum += a.qs[j];
    }
    EXPECT_EQ(a.sum, sum);
  }
  ActQ8 zero;
  const float zeros[kGroup] = {};
  QuantizeAct(zeros, &zero);
  EXPECT_EQ(zero.d, 0.0f);
  EXPECT_EQ(zero.sum, 0);
}

template <TensorType T>
void CheckDotGroup() {
  const int64_t n = 2048;
  const std::vector<uint8_t> row = Quantize(T, RandomRow(n, 11));
  const std::vector<float> x = RandomRow(n, 12, 3.0f);
  for (int64_t g = 0; g < n / kGroup; ++g) {
    ActQ8 a;
    QuantizeAct(&x[g * kGroup], &a);
    double want = 0.0, magnitude = 0.0;
    for (int j = 0; j < kGroup; ++j) {
      const double term = static_cast<double>(RowElement<T>(row.data(), g * kGroup + j)) *
                          (static_cast<double>(a.d) * a.qs[j]);
      want += term;
      magnitude += std::fabs(term);
    }
    const double got = DotGroup<T>(row.data(), g, a);
    ASSERT_NEAR(got, want, 1e-5 * magnitude + 1e-30) << TensorTypeName(T) << " group " << g;
  }
}

TEST(BlockMathTest, DotGroupMatchesTheDequantizedDot) {
  CheckDotGroup<TensorType::kQ8_0>();
  CheckDotGroup<TensorType::kQ4_0>();
  CheckDotGroup<TensorType::kQ4_K>();
  CheckDotGroup<TensorType::kQ5_K>();
  CheckDotGroup<TensorType::kQ6_K>();
}

TEST(BlockMathTest, Dp4aMultipliesSignedBytes) {
  EXPECT_EQ(Dp4a(0x01FF7F80, 0x02030405, 10), 10 + 1 * 2 + -1 * 3 + 127 * 4 + -128 * 5);
}

TEST(BlockMathTest, HadamardIsBitExactWithTheCpuTransform) {
  for (int n : {8, 32, 64, 128, 256}) {
    std::vector<float> a = RandomRow(n, static_cast<uint32_t>(n)), b = a;
    Hadamard(a.data(), n);
    HadamardTransform(b.data(), n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(Bits(a[i]), Bits(b[i])) << n << " " << i;
  }
}

// Rows that stress the encoders: Gaussian with outliers, constant blocks,
// zeros, exact ties of the rounding, one huge value, tiny (subnormal-scale)
// values.
std::vector<std::vector<float>> KvRows(int n) {
  std::vector<std::vector<float>> rows;
  for (uint32_t s = 0; s < 200; ++s) rows.push_back(RandomRow(n, 100 + s, s % 2 ? 0.3f : 4.0f));
  rows.push_back(std::vector<float>(n, 0.0f));
  rows.push_back(std::vector<float>(n, 1.5f));
  std::vector<float> ties(n);
  for (int i = 0; i < n; ++i) ties[i] = (i % 17 - 8) * 0.5f;
  rows.push_back(ties);
  std::vector<float> spike(n, 0.01f);
  spike[n / 3] = 1000.0f;
  rows.push_back(spike);
  rows.push_back(RandomRow(n, 9, 1e-6f));
  return rows;
}

TEST(BlockMathTest, Q3NlLevelsAreTheCpuTable) {
  for (int code = 0; code < 8; ++code) EXPECT_EQ(Q3NlLevel(code), kernels::kQ3NlLevels[code]);
}

TEST(BlockMathTest, KvRowsEncodeToTheCpuBytes) {
  struct Case {
    TensorType type;
    KvRounding rounding;
  };
  const Case cases[] = {
      {TensorType::kF32, KvRounding::kReference},  {TensorType::kF16, KvRounding::kReference},
      {TensorType::kBF16, KvRounding::kReference}, {TensorType::kQ8_0, KvRounding::kReference},
      {TensorType::kQ4_0, KvRounding::kReference}, {TensorType::kQ4_0, KvRounding::kMinError},
      {TensorType::kQ3_NL, KvRounding::kMinError}};
  for (int n : {64, 128}) {
    for (const Case& c : cases) {
      const KvEncodeFn cpu = GetKvEncoder(c.type, c.rounding);
      ASSERT_NE(cpu, nullptr);
      const size_t bytes = kernels::RowSizeBytes(*kernels::GetReferenceTypeTraits(c.type), n);
      int row_index = 0;
      for (const std::vector<float>& x : KvRows(n)) {
        std::vector<uint8_t> want(bytes), got(bytes, 0xAB);
        cpu(x.data(), want.data(), n);
        EncodeKvRow(c.type, c.rounding == KvRounding::kMinError, x.data(), got.data(), n);
        ASSERT_EQ(got, want) << TensorTypeName(c.type) << " rounding "
                             << static_cast<int>(c.rounding) << " n " << n << " row " << row_index;
        std::vector<float> decoded(n);
        kernels::GetReferenceTypeTraits(c.type)->to_float(want.data(), decoded.data(), n);
        for (int i = 0; i < n; ++i) {
          ASSERT_EQ(Bits(KvElement(c.type, want.data(), i)), Bits(decoded[i]));
        }
        ++row_index;
      }
    }
  }
}

}  // namespace
}  // namespace kvmesh::cuda
