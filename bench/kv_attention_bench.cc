// Paged attention over quantized KV pages: time per query head for each
// storage type and each row-kernel ISA this CPU runs (the scalar reference,
// AVX2, AVX-512), at a few context lengths. Single-threaded.
//
//   kvmesh_kv_attention_bench [--iters N]
//
// Prints a markdown table (docs/kv-cache.md quotes it).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <vector>

#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/runtime/cpu/cpu_attention.h"

namespace kvmesh {
namespace {

constexpr int kHeadDim = 128;
constexpr int kBlockSize = 16;

double NanosPerCall(const CpuKvPages& pages, const AttentionKernels& kernels,
                    const std::vector<int32_t>& table, int n_ctx, const std::vector<float>& q,
                    int iters) {
  AttentionScratch scratch;
  std::vector<float> out(kHeadDim);
  const float scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  PagedAttention(pages, kernels, 0, 0, table, n_ctx, q.data(), scale, &scratch, out.data());
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) {
    PagedAttention(pages, kernels, 0, 0, table, n_ctx, q.data(), scale, &scratch, out.data());
  }
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / iters;
}

int Main(int argc, char** argv) {
  int iters = 200;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
  }
  const TensorType types[] = {TensorType::kF32, TensorType::kF16, TensorType::kBF16,
                              TensorType::kQ8_0, TensorType::kQ4_0};
  std::vector<kernels::Isa> isas = {kernels::Isa::kScalar};
  if (kernels::ActiveIsa() != kernels::Isa::kScalar) isas.push_back(kernels::Isa::kAvx2);
  if (kernels::ActiveIsa() == kernels::Isa::kAvx512) isas.push_back(kernels::Isa::kAvx512);
  std::printf("head_dim %d, one query head, K and V of the same type, %d iterations\n\n", kHeadDim,
              iters);
  std::printf("| K/V type | context | scalar µs |");
  for (size_t i = 1; i < isas.size(); ++i) {
    std::printf(" %s µs | speed-up |", std::string(kernels::IsaName(isas[i])).c_str());
  }
  std::printf("\n|---|---|---|");
  for (size_t i = 1; i < isas.size(); ++i) std::printf("---|---|");
  std::printf("\n");
  for (TensorType type : types) {
    for (int n_ctx : {256, 2048}) {
      KvLayout layout;
      layout.n_layer = 1;
      layout.n_head_kv = 1;
      layout.head_dim = kHeadDim;
      layout.block_size = kBlockSize;
      layout.k_type = type;
      layout.v_type = type;
      const int blocks = n_ctx / kBlockSize;
      CpuKvPages pages(layout, blocks);
      std::vector<int32_t> table(blocks);
      std::iota(table.begin(), table.end(), 0);
      kernels::TestRandom rng(1);
      const kernels::TypeTraits* traits = kernels::GetTypeTraits(type);
      for (int j = 0; j < n_ctx; ++j) {
        const std::vector<float> k = kernels::MakeTestRow(rng, kHeadDim);
        const std::vector<float> v = kernels::MakeTestRow(rng, kHeadDim);
        traits->from_float(k.data(), pages.KRow(0, j / kBlockSize, j % kBlockSize, 0), kHeadDim);
        traits->from_float(v.data(), pages.VRow(0, j / kBlockSize, j % kBlockSize, 0), kHeadDim);
      }
      const std::vector<float> q = kernels::MakeTestRow(rng, kHeadDim);
      const double scalar = NanosPerCall(
          pages, AttentionKernels::For(layout, kernels::Isa::kScalar), table, n_ctx, q, iters);
      std::printf("| %s | %d | %.1f |", TensorTypeName(type).c_str(), n_ctx, scalar / 1e3);
      for (size_t i = 1; i < isas.size(); ++i) {
        const double t =
            NanosPerCall(pages, AttentionKernels::For(layout, isas[i]), table, n_ctx, q, iters);
        std::printf(" %.1f | %.1fx |", t / 1e3, scalar / t);
      }
      std::printf("\n");
    }
  }
  return 0;
}

}  // namespace
}  // namespace kvmesh

int main(int argc, char** argv) { return kvmesh::Main(argc, argv); }
