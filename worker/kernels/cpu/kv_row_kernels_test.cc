// The KV row kernels: the scalar entries are the reference kernels, and every
// SIMD variant this CPU can run agrees with them (dot through the shared
// vec_dot parity harness, accumulate element by element).
#include "worker/kernels/cpu/kv_row_kernels.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/reference_kernels.h"
#include "worker/kernels/cpu/type_list.h"

namespace kvmesh {
namespace {

constexpr TensorType kKvTypes[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                                   TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ3_NL};

std::vector<kernels::Isa> RunnableSimdIsas() {
  std::vector<kernels::Isa> isas;
  if (kernels::ActiveIsa() == kernels::Isa::kAvx2 || kernels::ActiveIsa() == kernels::Isa::kAvx512)
    isas.push_back(kernels::Isa::kAvx2);
  if (kernels::ActiveIsa() == kernels::Isa::kAvx512) isas.push_back(kernels::Isa::kAvx512);
  return isas;
}

TEST(KvRowKernelsTest, ScalarEntriesAreTheReferenceKernels) {
  EXPECT_EQ(GetKvRowKernels(TensorType::kF32, kernels::Isa::kScalar)->dot, kernels::VecDotF32);
  EXPECT_EQ(GetKvRowKernels(TensorType::kF16, kernels::Isa::kScalar)->dot, kernels::VecDotF16);
  EXPECT_EQ(GetKvRowKernels(TensorType::kBF16, kernels::Isa::kScalar)->dot, kernels::VecDotBf16);
  EXPECT_EQ(GetKvRowKernels(TensorType::kQ8_0, kernels::Isa::kScalar)->dot,
            kernels::VecDotQ8_0Q8_0);
  EXPECT_EQ(GetKvRowKernels(TensorType::kQ4_0, kernels::Isa::kScalar)->dot,
            kernels::VecDotQ4_0Q8_0);
  EXPECT_EQ(GetKvRowKernels(TensorType::kQ3_NL, kernels::Isa::kScalar)->dot,
            kernels::VecDotQ3_NLQ8_0);
  for (TensorType type : kKvTypes) {
    EXPECT_EQ(GetKvRowKernels(type, kernels::Isa::kScalar)->isa, kernels::Isa::kScalar);
  }
}

TEST(KvRowKernelsTest, OnlyKvStorageTypesHaveKernels) {
  EXPECT_EQ(GetKvRowKernels(TensorType::kQ4_K, kernels::Isa::kScalar), nullptr);
  EXPECT_EQ(GetKvRowKernels(TensorType::kQ8_1, kernels::Isa::kAvx2), nullptr);
}

// The table comes from the kv column of type_list.h, on every ISA.
TEST(KvRowKernelsTest, ExactlyTheListedKvTypesHaveKernels) {
  std::vector<TensorType> listed;
#define KVMESH_LISTED_KV_TYPE(Name, avx2, avx512, avx512bf16, amx, kv, ...) \
  KVMESH_IF_##kv(listed.push_back(TensorType::k##Name);)
  KVMESH_CPU_TYPE_LIST(KVMESH_LISTED_KV_TYPE)
#undef KVMESH_LISTED_KV_TYPE
  EXPECT_THAT(listed, testing::UnorderedElementsAreArray(kKvTypes));
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
    for (uint32_t id = 0; id < 64; ++id) {
      const TensorType type = static_cast<TensorType>(id);
      const bool is_listed = std::find(listed.begin(), listed.end(), type) != listed.end();
      EXPECT_EQ(GetKvRowKernels(type, isa) != nullptr, is_listed)
          << kernels::IsaName(isa) << " " << TensorTypeName(type);
    }
  }
}

#if defined(KVMESH_X86_SIMD)
TEST(KvRowKernelsTest, X86BuildHasEveryVariant) {
  for (TensorType type : kKvTypes) {
    EXPECT_EQ(GetKvRowKernels(type, kernels::Isa::kAvx2)->isa, kernels::Isa::kAvx2);
    EXPECT_EQ(GetKvRowKernels(type, kernels::Isa::kAvx512)->isa, kernels::Isa::kAvx512);
  }
  // Block kernels: every KV type on AVX2 and AVX-512, none on the scalar tier.
  for (TensorType type : kKvTypes) {
    for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
      const bool expected = isa != kernels::Isa::kScalar;
      EXPECT_EQ(GetKvBlockKernels(type, isa) != nullptr, expected)
          << kernels::IsaName(isa) << " " << TensorTypeName(type);
    }
  }
}
#endif

TEST(KvRowKernelsTest, SimdDotMatchesReference) {
  const std::vector<kernels::Isa> isas = RunnableSimdIsas();
  if (isas.empty()) GTEST_SKIP() << "this CPU or build has no AVX2 KV kernels";
  kernels::ParityOptions options;
  options.long_length = 512;  // longer than any head; covers loops and tails
  for (kernels::Isa isa : isas) {
    for (TensorType type : kKvTypes) {
      const KvRowKernels* k = GetKvRowKernels(type, isa);
      const kernels::ParityReport report =
          kernels::CheckVecDotParity(*kernels::GetTypeTraits(type), k->dot, options);
      EXPECT_TRUE(report.ok) << kernels::IsaName(isa) << " " << TensorTypeName(type) << ": "
                             << report.failure;
      EXPECT_GT(report.rows_checked, 60);
    }
  }
}

// out starts non-zero so the kernels' read-modify-write is checked too.
TEST(KvRowKernelsTest, SimdAccumulateMatchesReference) {
  const std::vector<kernels::Isa> isas = RunnableSimdIsas();
  if (isas.empty()) GTEST_SKIP() << "this CPU or build has no AVX2 KV kernels";
  kernels::TestRandom rng(77);
  for (kernels::Isa isa : isas) {
    for (TensorType type : kKvTypes) {
      const kernels::TypeTraits* traits = kernels::GetTypeTraits(type);
      const KvRowKernels* simd = GetKvRowKernels(type, isa);
      const KvRowKernels* reference = GetKvRowKernels(type, kernels::Isa::kScalar);
      const std::vector<int64_t> lengths = traits->block_size == 1
                                               ? std::vector<int64_t>{1, 7, 16, 17, 33, 64, 200}
                                               : std::vector<int64_t>{32, 64, 96, 256};
      for (int64_t n : lengths) {
        const std::vector<float> source = kernels::MakeTestRow(rng, n);
        std::vector<uint8_t> row(kernels::RowSizeBytes(*traits, n));
        traits->from_float(source.data(), row.data(), n);
        const std::vector<float> start = kernels::MakeTestRow(rng, n);
        std::vector<float> dequantized(n);
        traits->to_float(row.data(), dequantized.data(), n);
        const float weight = 0.375f + rng.Uniform();
        std::vector<float> want = start, got = start;
        reference->accumulate(n, row.data(), weight, want.data());
        simd->accumulate(n, row.data(), weight, got.data());
        for (int64_t i = 0; i < n; ++i) {
          // Both round w·v and the sum at most a few times.
          const double bound =
              4 * 0x1p-23 * (std::fabs(start[i]) + std::fabs(weight * dequantized[i])) + 1e-30;
          ASSERT_LE(std::fabs(got[i] - want[i]), bound)
              << kernels::IsaName(isa) << " " << TensorTypeName(type) << " n=" << n << " i=" << i;
        }
      }
    }
  }
}

TEST(KvRowKernelsTest, ReferenceAccumulateIsToFloatThenAxpy) {
  // 0.5 * (q4_0 block of one scale) added to 1.0: exact in float.
  const kernels::TypeTraits* traits = kernels::GetTypeTraits(TensorType::kQ4_0);
  std::vector<float> source(32);
  for (int i = 0; i < 32; ++i) source[i] = static_cast<float>(i % 16) - 8.0f;  // levels 0..15
  std::vector<uint8_t> row(kernels::RowSizeBytes(*traits, 32));
  traits->from_float(source.data(), row.data(), 32);
  std::vector<float> out(32, 1.0f);
  GetKvRowKernels(TensorType::kQ4_0, kernels::Isa::kScalar)
      ->accumulate(32, row.data(), 0.5f, out.data());
  for (int i = 0; i < 32; ++i) EXPECT_EQ(out[i], 1.0f + 0.5f * source[i]) << i;
}

}  // namespace
}  // namespace kvmesh
