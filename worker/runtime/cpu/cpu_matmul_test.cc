// MatMul on packed weights: equal to the reference vec_dot bit for bit for
// quantized weights (and close for float weights), on every ISA tier the host
// has, and independent of the batch, the thread count and the token chunking.
#include "worker/runtime/cpu/cpu_matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh {
namespace {

using T = TensorType;
using kernels::Isa;

struct Matrix {
  std::vector<uint8_t> bytes;
  WeightMatrix w;
};

Matrix MakeMatrix(T type, int64_t rows, int64_t cols, uint64_t seed) {
  const kernels::TypeTraits& traits = *kernels::GetReferenceTypeTraits(type);
  Matrix m;
  const size_t row_bytes = kernels::RowSizeBytes(traits, cols);
  m.bytes.resize(row_bytes * rows);
  kernels::TestRandom rng(seed);
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<float> v = kernels::MakeTestRow(rng, cols);
    traits.from_float(v.data(), m.bytes.data() + r * row_bytes, cols);
  }
  m.w.name = "test";
  m.w.type = type;
  m.w.rows = rows;
  m.w.cols = cols;
  m.w.row_bytes = row_bytes;
  m.w.data = m.bytes.data();
  m.w.traits = &traits;
  return m;
}

std::vector<float> MakeInput(int64_t tokens, int64_t cols, uint64_t seed) {
  kernels::TestRandom rng(seed);
  std::vector<float> x;
  for (int64_t t = 0; t < tokens; ++t) {
    const std::vector<float> v = kernels::MakeTestRow(rng, cols);
    x.insert(x.end(), v.begin(), v.end());
  }
  return x;
}

// y by the reference: the vec_dot_type's from_float, then vec_dot per output.
std::vector<float> Reference(const WeightMatrix& w, const std::vector<float>& x, int64_t tokens) {
  const kernels::TypeTraits& xt = *kernels::GetReferenceTypeTraits(w.traits->vec_dot_type);
  std::vector<uint8_t> xq(kernels::RowSizeBytes(xt, w.cols));
  std::vector<float> y(tokens * w.rows);
  for (int64_t t = 0; t < tokens; ++t) {
    xt.from_float(x.data() + t * w.cols, xq.data(), w.cols);
    for (int64_t r = 0; r < w.rows; ++r)
      y[t * w.rows + r] = w.traits->vec_dot(w.cols, w.Row(r), xq.data());
  }
  return y;
}

std::vector<float> Product(const PackedMatrix& p, const std::vector<float>& x, int64_t tokens,
                           int threads) {
  ThreadPool pool(threads);
  QuantizedRows scratch;
  std::vector<float> y(tokens * p.rows(), std::nanf(""));
  MatMul(p, x.data(), tokens, y.data(), pool, &scratch);
  return y;
}

bool IsFloat(T type) { return type == T::kF32 || type == T::kF16 || type == T::kBF16; }

struct Case {
  T type;
  Isa isa;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  return TensorTypeName(info.param.type) + "_" + std::string(kernels::IsaName(info.param.isa));
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    for (T type : {T::kF32, T::kF16, T::kBF16, T::kQ4_0, T::kQ4_1, T::kQ5_0, T::kQ5_1, T::kQ8_0,
                   T::kQ4_K, T::kQ5_K, T::kQ6_K, T::kQ2_K, T::kQ3_K, T::kIQ4_NL, T::kIQ4_XS}) {
      cases.push_back({type, isa});
    }
  }
  return cases;
}

class CpuMatMulTest : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!kernels::IsaSupported(GetParam().isa)) {
      GTEST_SKIP() << "this CPU lacks the " << kernels::IsaName(GetParam().isa) << " tier";
    }
  }
};

// 70 rows: four full panels and a partial one.
TEST_P(CpuMatMulTest, EqualsTheReferenceVecDot) {
  const auto [type, isa] = GetParam();
  const int64_t cols = IsFloat(type) ? 200 : 512;
  const Matrix m = MakeMatrix(type, 70, cols, 1);
  ThreadPool pool(2);
  const PackedMatrix packed = PackedMatrix::Pack(m.w, isa, pool);
  EXPECT_EQ(packed.num_panels(), 5);
  const std::vector<float> x = MakeInput(9, cols, 2);
  const std::vector<float> want = Reference(m.w, x, 9);
  const std::vector<float> got = Product(packed, x, 9, 2);
  for (size_t i = 0; i < want.size(); ++i) {
    if (IsFloat(type)) {
      ASSERT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << i;
    } else {
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

// Row t of a product over many tokens - split into token chunks, over any
// number of threads - has the bits of token t multiplied alone.
TEST_P(CpuMatMulTest, ResultsDependOnNeitherBatchNorThreads) {
  const auto [type, isa] = GetParam();
  // Long rows make the activations of 150 tokens overflow one token chunk.
  const int64_t cols = IsFloat(type) ? 2048 : 8192;
  const Matrix m = MakeMatrix(type, 40, cols, 3);
  ThreadPool pack_pool(1);
  const PackedMatrix packed = PackedMatrix::Pack(m.w, isa, pack_pool);
  constexpr int64_t kTokens = 150;
  const std::vector<float> x = MakeInput(kTokens, cols, 4);
  const std::vector<float> batch = Product(packed, x, kTokens, 1);
  for (int threads : {2, 3}) {
    EXPECT_EQ(
        0, std::memcmp(batch.data(), Product(packed, x, kTokens, threads).data(), batch.size() * 4))
        << threads << " threads";
  }
  for (int64_t t : {int64_t{0}, int64_t{77}, kTokens - 1}) {
    const std::vector<float> one(x.begin() + t * cols, x.begin() + (t + 1) * cols);
    const std::vector<float> alone = Product(packed, one, 1, 2);
    EXPECT_EQ(0, std::memcmp(alone.data(), batch.data() + t * 40, 40 * 4)) << "token " << t;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryTier, CpuMatMulTest, testing::ValuesIn(AllCases()), CaseName);

// Q, K and V in one call, with weight types of two activation types.
TEST(CpuMatMulSharedTest, MixedTargetsMatchSeparateProducts) {
  const Matrix q = MakeMatrix(T::kQ4_K, 64, 256, 5);
  const Matrix k = MakeMatrix(T::kQ4_K, 32, 256, 6);
  const Matrix v = MakeMatrix(T::kQ6_K, 32, 256, 7);
  const Matrix f = MakeMatrix(T::kQ8_0, 48, 256, 8);
  ThreadPool pool(2);
  const PackedMatrix pq = PackedMatrix::Pack(q.w, kernels::ActiveIsa(), pool);
  const PackedMatrix pk = PackedMatrix::Pack(k.w, kernels::ActiveIsa(), pool);
  const PackedMatrix pv = PackedMatrix::Pack(v.w, kernels::ActiveIsa(), pool);
  const PackedMatrix pf = PackedMatrix::Pack(f.w, kernels::ActiveIsa(), pool);
  const std::vector<float> x = MakeInput(5, 256, 9);
  std::vector<float> yq(5 * 64), yk(5 * 32), yv(5 * 32), yf(5 * 48);
  const MatMulTarget targets[] = {
      {&pq, yq.data()}, {&pk, yk.data()}, {&pv, yv.data()}, {&pf, yf.data()}};
  QuantizedRows scratch;
  MatMulShared(x.data(), 5, targets, pool, &scratch);
  EXPECT_EQ(yq, Reference(q.w, x, 5));
  EXPECT_EQ(yk, Reference(k.w, x, 5));
  EXPECT_EQ(yv, Reference(v.w, x, 5));
  EXPECT_EQ(yf, Reference(f.w, x, 5));
}

// A matrix packed into the caller's bytes is the same matrix: same panels,
// read from where the caller put them, same products.
TEST(PackedMatrixTest, PackIntoUsesTheCallersBytes) {
  const Matrix m = MakeMatrix(T::kQ4_K, 40, 512, 10);
  ThreadPool pool(2);
  const PackedMatrix own = PackedMatrix::Pack(m.w, kernels::ActiveIsa(), pool);
  const size_t bytes = PackedMatrix::PackedBytes(m.w);
  ASSERT_EQ(bytes, own.panel_bytes() * 3);
  AlignedBuffer storage(bytes + 64);
  const PackedMatrix into =
      PackedMatrix::PackInto(m.w, kernels::ActiveIsa(), pool, storage.data() + 64);
  EXPECT_EQ(into.Panel(0), storage.data() + 64);
  EXPECT_EQ(0, std::memcmp(into.Panel(0), own.Panel(0), bytes));
  const std::vector<float> x = MakeInput(3, 512, 11);
  EXPECT_EQ(Product(into, x, 3, 2), Product(own, x, 3, 2));
}

// Large buffers start on a huge-page boundary (so transparent huge pages
// can back all of them), small ones on a cache line; both start zeroed and
// keep their address when moved.
TEST(AlignedBufferTest, LargeBuffersStartOnAHugePage) {
  for (size_t bytes : {size_t{100}, size_t{5} << 20, (size_t{9} << 20) + 1}) {
    AlignedBuffer b(bytes);
    ASSERT_EQ(b.size(), bytes);
    const auto address = reinterpret_cast<uintptr_t>(b.data());
    EXPECT_EQ(address % 64, 0u) << bytes;
    if (bytes >= (size_t{4} << 20)) {
      EXPECT_EQ(address % (size_t{2} << 20), 0u) << bytes;
    }
    EXPECT_EQ(b.data()[0], 0);
    EXPECT_EQ(b.data()[bytes - 1], 0);
    std::memset(b.data(), 0x5A, bytes);  // all of it is writable
    const AlignedBuffer moved(std::move(b));
    EXPECT_EQ(moved.data(), reinterpret_cast<const uint8_t*>(address));
    EXPECT_EQ(moved.data()[bytes - 1], 0x5A);
  }
}

}  // namespace
}  // namespace kvmesh
