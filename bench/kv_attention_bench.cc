// Paged attention over quantized KV pages: time per query head for each
// storage type and each row-kernel ISA this CPU runs (the scalar reference,
// AVX2, AVX-512), at a few context lengths. Then, for every type and every
// ISA with block kernels, a group of query heads sharing a KV head walked
// with the row kernels against the block kernels, alternating.
// Single-threaded.
//
//   kvmesh_kv_attention_bench [--iters N]
//
// Prints markdown tables (docs/kv-cache.md quotes them).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <numeric>
#include <string>
#include <vector>

#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/runtime/cpu/cpu_attention.h"

namespace kvmesh {
namespace {

constexpr int kHeadDim = 128;
constexpr int kBlockSize = 16;

// Time of one PagedAttentionGroup call over n_q heads (q holds them).
double NanosPerCall(const CpuKvPages& pages, const AttentionKernels& kernels,
                    const std::vector<int32_t>& table, int n_ctx, const std::vector<float>& q,
                    int n_q, int iters) {
  const int head_dim = pages.layout().head_dim;
  AttentionScratch scratch;
  std::vector<float> out(q.size());
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  auto call = [&] {
    PagedAttentionGroup(pages, kernels, 0, 0, table, n_ctx, q.data(), n_q, scale, &scratch,
                        out.data());
  };
  call();
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < iters; ++i) call();
  const auto end = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() / iters;
}

KvLayout OneHeadLayout(TensorType type, int head_dim) {
  KvLayout layout;
  layout.n_layer = 1;
  layout.n_head_kv = 1;
  layout.head_dim = head_dim;
  layout.block_size = kBlockSize;
  layout.k_type = type;
  layout.v_type = type;
  return layout;
}

// Pages holding n_ctx random K and V rows at positions 0..n_ctx-1.
CpuKvPages MakePages(const KvLayout& layout, int n_ctx, std::vector<int32_t>* table) {
  const int blocks = (n_ctx + kBlockSize - 1) / kBlockSize;
  CpuKvPages pages(layout, blocks);
  table->resize(blocks);
  std::iota(table->begin(), table->end(), 0);
  kernels::TestRandom rng(1);
  const kernels::TypeTraits* traits = kernels::GetTypeTraits(layout.k_type);
  for (int j = 0; j < n_ctx; ++j) {
    const std::vector<float> k = kernels::MakeTestRow(rng, layout.head_dim);
    const std::vector<float> v = kernels::MakeTestRow(rng, layout.head_dim);
    traits->from_float(k.data(), pages.KRow(0, j / kBlockSize, j % kBlockSize, 0), layout.head_dim);
    traits->from_float(v.data(), pages.VRow(0, j / kBlockSize, j % kBlockSize, 0), layout.head_dim);
  }
  return pages;
}

// A group of n_q query heads over rows of `type` on `isa`: the row kernels'
// walk against the block kernels', alternating `rounds` times; medians.
void CompareBlockKernels(TensorType type, kernels::Isa isa, int iters) {
  constexpr int kRounds = 5;
  struct Shape {
    int head_dim, n_q;
  };
  for (Shape shape : {Shape{64, 4}, Shape{128, 1}, Shape{128, 4}}) {
    for (int n_ctx : {512, 2048}) {
      const KvLayout layout = OneHeadLayout(type, shape.head_dim);
      std::vector<int32_t> table;
      const CpuKvPages pages = MakePages(layout, n_ctx, &table);
      kernels::TestRandom rng(2);
      std::vector<float> q;
      for (int g = 0; g < shape.n_q; ++g) {
        const std::vector<float> row = kernels::MakeTestRow(rng, shape.head_dim);
        q.insert(q.end(), row.begin(), row.end());
      }
      const AttentionKernels blocks = AttentionKernels::For(layout, isa);
      AttentionKernels rows = blocks;
      rows.k_blocks = nullptr;
      rows.v_blocks = nullptr;
      std::vector<double> row_ns, block_ns;
      for (int r = 0; r < kRounds; ++r) {
        row_ns.push_back(NanosPerCall(pages, rows, table, n_ctx, q, shape.n_q, iters));
        block_ns.push_back(NanosPerCall(pages, blocks, table, n_ctx, q, shape.n_q, iters));
      }
      std::sort(row_ns.begin(), row_ns.end());
      std::sort(block_ns.begin(), block_ns.end());
      const double a = row_ns[kRounds / 2], b = block_ns[kRounds / 2];
      std::printf("| %s | %s | %d | %d | %d | %.1f | %.1f | %.2fx |\n",
                  std::string(kernels::IsaName(isa)).c_str(), TensorTypeName(type).c_str(),
                  shape.head_dim, shape.n_q, n_ctx, a / 1e3, b / 1e3, a / b);
    }
  }
}

// The block kernels against the row kernels for every KV type on every ISA
// of this CPU that has them.
void CompareBlockKernels(const TensorType* types, size_t n_types, int iters) {
  std::vector<kernels::Isa> isas;
  for (kernels::Isa isa : {kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
    if (kernels::IsaSupported(isa) && GetKvBlockKernels(TensorType::kF16, isa) != nullptr) {
      isas.push_back(isa);
    }
  }
  if (isas.empty()) {
    std::printf("\nno block kernels on this CPU (%s): comparison skipped\n",
                std::string(kernels::IsaName(kernels::ActiveIsa())).c_str());
    return;
  }
  std::printf(
      "\nA group of query heads sharing one KV head, K and V of one type: row kernels against "
      "block kernels, median of 5 alternating rounds of %d calls\n\n",
      iters);
  std::printf(
      "| ISA | K/V type | head_dim | query heads | context | row kernels µs | block kernels µs | "
      "speed-up |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");
  for (kernels::Isa isa : isas) {
    for (size_t t = 0; t < n_types; ++t) CompareBlockKernels(types[t], isa, iters);
  }
}

int Main(int argc, char** argv) {
  int iters = 200;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--iters") == 0) iters = std::atoi(argv[i + 1]);
  }
  const TensorType types[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                              TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ3_NL};
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
      const KvLayout layout = OneHeadLayout(type, kHeadDim);
      std::vector<int32_t> table;
      const CpuKvPages pages = MakePages(layout, n_ctx, &table);
      kernels::TestRandom rng(2);
      const std::vector<float> q = kernels::MakeTestRow(rng, kHeadDim);
      const double scalar = NanosPerCall(
          pages, AttentionKernels::For(layout, kernels::Isa::kScalar), table, n_ctx, q, 1, iters);
      std::printf("| %s | %d | %.1f |", TensorTypeName(type).c_str(), n_ctx, scalar / 1e3);
      for (size_t i = 1; i < isas.size(); ++i) {
        const double t =
            NanosPerCall(pages, AttentionKernels::For(layout, isas[i]), table, n_ctx, q, 1, iters);
        std::printf(" %.1f | %.1fx |", t / 1e3, scalar / t);
      }
      std::printf("\n");
    }
  }
  CompareBlockKernels(types, std::size(types), iters);
  return 0;
}

}  // namespace
}  // namespace kvmesh

int main(int argc, char** argv) { return kvmesh::Main(argc, argv); }
