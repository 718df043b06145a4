// PagedAttention: a hand-checked case, paged vs contiguous placement of the
// same K/V (identical outputs), and the SIMD kernels against the scalar
// reference on whole attention rows.
#include "worker/runtime/cpu/cpu_attention.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

#include "worker/kernels/cpu/kernel_parity.h"

namespace kvmesh {
namespace {

constexpr TensorType kKvTypes[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                                   TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ3_NL};

KvLayout SmallLayout(TensorType k_type, TensorType v_type) {
  KvLayout layout;
  layout.n_layer = 2;
  layout.n_head_kv = 2;
  layout.head_dim = 64;
  layout.block_size = 4;
  layout.k_type = k_type;
  layout.v_type = v_type;
  return layout;
}

void StoreRow(TensorType type, const std::vector<float>& values, uint8_t* dst) {
  kernels::GetTypeTraits(type)->from_float(values.data(), dst, static_cast<int64_t>(values.size()));
}

// Writes position j's K and V (every layer and head) where `table` puts it.
// Values depend only on (layer, head, position), so two tables give the same
// logical cache.
void FillPositions(CpuKvPages* pages, const std::vector<int32_t>& table, int n_ctx) {
  const KvLayout& layout = pages->layout();
  for (int layer = 0; layer < layout.n_layer; ++layer) {
    for (int head = 0; head < layout.n_head_kv; ++head) {
      kernels::TestRandom rng(1000 * layer + 10 * head + 1);
      for (int j = 0; j < n_ctx; ++j) {
        const std::vector<float> k = kernels::MakeTestRow(rng, layout.head_dim);
        const std::vector<float> v = kernels::MakeTestRow(rng, layout.head_dim);
        const int32_t block = table[j / layout.block_size];
        const int slot = j % layout.block_size;
        StoreRow(layout.k_type, k, pages->KRow(layer, block, slot, head));
        StoreRow(layout.v_type, v, pages->VRow(layer, block, slot, head));
      }
    }
  }
}

TEST(PagedAttentionTest, WeightsFollowSoftmaxOfScores) {
  // Scores 0 and ln 3 give weights 1/4 and 3/4; V rows 4·e1 and 8·e1 mix to
  // 7·e1.
  KvLayout layout = SmallLayout(TensorType::kF32, TensorType::kF32);
  layout.n_layer = 1;
  layout.n_head_kv = 1;
  CpuKvPages pages(layout, 1);
  std::vector<float> k0(64, 0.0f), k1(64, 0.0f), v0(64, 0.0f), v1(64, 0.0f), q(64, 0.0f);
  k1[0] = std::log(3.0f);
  v0[1] = 4.0f;
  v1[1] = 8.0f;
  q[0] = 1.0f;
  StoreRow(TensorType::kF32, k0, pages.KRow(0, 0, 0, 0));
  StoreRow(TensorType::kF32, k1, pages.KRow(0, 0, 1, 0));
  StoreRow(TensorType::kF32, v0, pages.VRow(0, 0, 0, 0));
  StoreRow(TensorType::kF32, v1, pages.VRow(0, 0, 1, 0));
  const std::vector<int32_t> table = {0};
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::ActiveIsa()}) {
    AttentionScratch scratch;
    std::vector<float> out(64, -1.0f);
    PagedAttention(pages, AttentionKernels::For(layout, isa), 0, 0, table, 2, q.data(), 1.0f,
                   &scratch, out.data());
    EXPECT_FLOAT_EQ(out[1], 7.0f) << kernels::IsaName(isa);
    EXPECT_EQ(out[0], 0.0f);
    EXPECT_EQ(out[63], 0.0f);
    // Only position 0 visible: all weight on V0.
    PagedAttention(pages, AttentionKernels::For(layout, isa), 0, 0, table, 1, q.data(), 1.0f,
                   &scratch, out.data());
    EXPECT_EQ(out[1], 4.0f) << kernels::IsaName(isa);
  }
}

// The same K/V in scattered blocks and in contiguous blocks: bit-identical
// outputs for every storage type, layer, head and context length, with the
// scattered pool's other blocks full of unrelated data.
TEST(PagedAttentionTest, PagedEqualsContiguous) {
  const std::vector<int32_t> scattered = {7, 2, 11, 0, 5, 9, 1, 10, 3, 8};
  std::vector<int32_t> contiguous(scattered.size());
  std::iota(contiguous.begin(), contiguous.end(), 0);
  constexpr int kContext = 37;  // ten blocks of 4, the last one partly used
  for (TensorType type : kKvTypes) {
    const KvLayout layout = SmallLayout(type, type);
    CpuKvPages paged(layout, 12);
    CpuKvPages flat(layout, 12);
    FillPositions(&paged, {4, 6}, 8);  // unrelated data in the unused blocks
    FillPositions(&paged, scattered, kContext);
    FillPositions(&flat, contiguous, kContext);
    const AttentionKernels kernels = AttentionKernels::For(layout, kernels::ActiveIsa());
    kernels::TestRandom rng(5);
    AttentionScratch scratch;
    for (int layer = 0; layer < layout.n_layer; ++layer) {
      for (int head = 0; head < layout.n_head_kv; ++head) {
        for (int n_ctx : {1, 4, 5, 36, 37}) {
          const std::vector<float> q = kernels::MakeTestRow(rng, layout.head_dim);
          std::vector<float> a(layout.head_dim), b(layout.head_dim);
          PagedAttention(paged, kernels, layer, head, scattered, n_ctx, q.data(), 0.125f, &scratch,
                         a.data());
          PagedAttention(flat, kernels, layer, head, contiguous, n_ctx, q.data(), 0.125f, &scratch,
                         b.data());
          for (int d = 0; d < layout.head_dim; ++d) {
            ASSERT_EQ(a[d], b[d]) << TensorTypeName(type) << " layer " << layer << " head " << head
                                  << " n_ctx " << n_ctx << " d " << d;
          }
        }
      }
    }
  }
}

// SIMD attention against the scalar reference, for K/V type pairs the
// engine offers: differences are float rounding only.
TEST(PagedAttentionTest, SimdMatchesScalarReference) {
  if (kernels::ActiveIsa() == kernels::Isa::kScalar)
    GTEST_SKIP() << "no SIMD KV kernels on this CPU/build";
  std::vector<int32_t> table(16);
  std::iota(table.begin(), table.end(), 0);
  for (TensorType k_type : kKvTypes) {
    for (TensorType v_type : {TensorType::kF16, k_type}) {
      const KvLayout layout = SmallLayout(k_type, v_type);
      CpuKvPages pages(layout, 16);
      FillPositions(&pages, table, 64);
      kernels::TestRandom rng(9);
      AttentionScratch scratch;
      for (kernels::Isa isa : {kernels::Isa::kAvx2, kernels::ActiveIsa()}) {
        const AttentionKernels reference = AttentionKernels::For(layout, kernels::Isa::kScalar);
        const AttentionKernels simd = AttentionKernels::For(layout, isa);
        for (int n_ctx : {1, 17, 64}) {
          const std::vector<float> q = kernels::MakeTestRow(rng, layout.head_dim);
          std::vector<float> want(layout.head_dim), got(layout.head_dim);
          PagedAttention(pages, reference, 1, 1, table, n_ctx, q.data(), 0.125f, &scratch,
                         want.data());
          PagedAttention(pages, simd, 1, 1, table, n_ctx, q.data(), 0.125f, &scratch, got.data());
          for (int d = 0; d < layout.head_dim; ++d) {
            ASSERT_NEAR(got[d], want[d], 2e-5 * (1.0 + std::fabs(want[d])))
                << "K " << TensorTypeName(k_type) << " V " << TensorTypeName(v_type) << " "
                << kernels::IsaName(isa) << " n_ctx " << n_ctx << " d " << d;
          }
        }
      }
    }
  }
}

// A group of query heads sharing a KV head gets, head by head, exactly what
// each head gets alone (the executor attends a whole group per call).
TEST(PagedAttentionTest, GroupEqualsHeadsAlone) {
  std::vector<int32_t> table(16);
  std::iota(table.begin(), table.end(), 0);
  for (TensorType k_type : kKvTypes) {
    const KvLayout layout = SmallLayout(k_type, TensorType::kF16);
    CpuKvPages pages(layout, 16);
    FillPositions(&pages, table, 64);
    kernels::TestRandom rng(21);
    for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::ActiveIsa()}) {
      const AttentionKernels attention = AttentionKernels::For(layout, isa);
      for (int n_q : {1, 4, 7}) {
        for (int n_ctx : {1, 33, 64}) {
          std::vector<float> q;
          for (int g = 0; g < n_q; ++g) {
            const std::vector<float> row = kernels::MakeTestRow(rng, layout.head_dim);
            q.insert(q.end(), row.begin(), row.end());
          }
          AttentionScratch scratch;
          std::vector<float> group(q.size()), alone(layout.head_dim);
          PagedAttentionGroup(pages, attention, 1, 1, table, n_ctx, q.data(), n_q, 0.125f, &scratch,
                              group.data());
          for (int g = 0; g < n_q; ++g) {
            PagedAttention(pages, attention, 1, 1, table, n_ctx, q.data() + g * layout.head_dim,
                           0.125f, &scratch, alone.data());
            for (int d = 0; d < layout.head_dim; ++d) {
              ASSERT_EQ(group[g * layout.head_dim + d], alone[d])
                  << "K " << TensorTypeName(k_type) << " " << kernels::IsaName(isa) << " n_q "
                  << n_q << " head " << g << " n_ctx " << n_ctx << " d " << d;
            }
          }
        }
      }
    }
  }
}

// The block kernels give the row kernels' floats bit for bit: decode (one
// token) and prefill (many) attend with the same arithmetic however the work
// is cut, and they equal the walk with the row kernels at every head_dim,
// head count and context length, including partial blocks of positions.
TEST(PagedAttentionTest, BlockKernelsEqualRowKernels) {
  std::vector<kernels::Isa> isas;
  for (kernels::Isa isa : {kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
    if (kernels::IsaSupported(isa) && GetKvBlockKernels(TensorType::kF16, isa) != nullptr) {
      isas.push_back(isa);
    }
  }
  if (isas.empty()) {
    GTEST_SKIP() << "no block attention kernels on this CPU ("
                 << kernels::IsaName(kernels::ActiveIsa()) << ")";
  }
  struct Case {
    TensorType k, v;
    std::vector<int> head_dims;
  };
  const std::vector<int> quantized_dims = {64, 32, 96, 128, 160, 192, 256};
  const Case cases[] = {
      {TensorType::kF16, TensorType::kF16, {64, 128, 80, 8, 16, 24, 32, 96, 256, 72}},
      {TensorType::kBF16, TensorType::kBF16, {64, 128, 80, 8, 16, 24, 32, 96, 256, 72}},
      {TensorType::kF32, TensorType::kF32, {64, 128, 80, 8, 16, 96, 256, 72}},
      {TensorType::kQ8_0, TensorType::kQ8_0, quantized_dims},
      {TensorType::kQ4_0, TensorType::kQ4_0, quantized_dims},
      {TensorType::kQ3_NL, TensorType::kQ3_NL, quantized_dims},
      {TensorType::kQ8_0, TensorType::kQ3_NL, {64}},
      {TensorType::kQ4_0, TensorType::kF16, {64}},
      {TensorType::kF16, TensorType::kBF16, {128}},
      {TensorType::kBF16, TensorType::kQ4_0, {96}},
  };
  for (kernels::Isa isa : isas) {
    for (const Case& c : cases) {
      if (GetKvBlockKernels(c.k, isa) == nullptr || GetKvBlockKernels(c.v, isa) == nullptr)
        continue;
      for (int head_dim : c.head_dims) {
        KvLayout layout = SmallLayout(c.k, c.v);
        layout.head_dim = head_dim;
        constexpr int kMaxCtx = 100;
        std::vector<int32_t> table(kMaxCtx / layout.block_size);
        // Scattered pages, so a block of 16 positions spans several of them.
        for (size_t i = 0; i < table.size(); ++i) {
          table[i] = static_cast<int32_t>((7 * i + 3) % table.size());
        }
        CpuKvPages pages(layout, static_cast<int>(table.size()));
        FillPositions(&pages, table, kMaxCtx);
        const AttentionKernels blocks = AttentionKernels::For(layout, isa);
        ASSERT_EQ(blocks.k.isa, isa);
        ASSERT_NE(blocks.k_blocks, nullptr) << TensorTypeName(c.k);
        ASSERT_NE(blocks.v_blocks, nullptr) << TensorTypeName(c.v);
        AttentionKernels rows = blocks;
        rows.k_blocks = nullptr;
        rows.v_blocks = nullptr;
        kernels::TestRandom rng(head_dim);
        for (int n_q : {1, 2, 3, 4, 5, 6, 7, 8, 9, 16}) {
          for (int n_ctx : {1, 15, 16, 17, 40, kMaxCtx}) {
            std::vector<float> q;
            for (int g = 0; g < n_q; ++g) {
              const std::vector<float> row = kernels::MakeTestRow(rng, head_dim);
              q.insert(q.end(), row.begin(), row.end());
            }
            AttentionScratch scratch;
            std::vector<float> got(q.size()), want(q.size());
            PagedAttentionGroup(pages, blocks, 1, 1, table, n_ctx, q.data(), n_q, 0.125f, &scratch,
                                got.data());
            PagedAttentionGroup(pages, rows, 1, 1, table, n_ctx, q.data(), n_q, 0.125f, &scratch,
                                want.data());
            for (size_t i = 0; i < got.size(); ++i) {
              ASSERT_EQ(got[i], want[i])
                  << kernels::IsaName(isa) << " " << TensorTypeName(c.k) << "/"
                  << TensorTypeName(c.v) << " head_dim " << head_dim << " n_q " << n_q << " n_ctx "
                  << n_ctx << " head " << i / head_dim << " d " << i % head_dim;
            }
          }
        }
      }
    }
  }
}

// A tile of consecutive positions gives each head what it gets alone, bit
// for bit, for every K/V type (with and without block kernels), head size and
// tile shape; queries and outputs sit at a stride, as in the executor.
TEST(PagedAttentionTest, TileEqualsEachTokenAlone) {
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2, kernels::Isa::kAvx512}) {
    if (!kernels::IsaSupported(isa)) continue;
    SCOPED_TRACE(kernels::IsaName(isa));
    for (TensorType type : kKvTypes) {
      for (int head_dim : {8, 64, 96}) {
        if (kernels::GetTypeTraits(type)->block_size > 1 && head_dim % 32 != 0) continue;
        KvLayout layout = SmallLayout(type, type);
        layout.head_dim = head_dim;
        constexpr int kMaxCtx = 60;
        std::vector<int32_t> table(kMaxCtx / layout.block_size);
        for (size_t i = 0; i < table.size(); ++i) {
          table[i] = static_cast<int32_t>((5 * i + 2) % table.size());
        }
        CpuKvPages pages(layout, static_cast<int>(table.size()));
        FillPositions(&pages, table, kMaxCtx);
        const AttentionKernels kernels = AttentionKernels::For(layout, isa);
        kernels::TestRandom rng(head_dim + 7);
        for (int n_q : {1, 2, 4}) {
          for (int n_tokens : {1, 2, 3, 4}) {
            for (int n_ctx : {1, 16, 17, kMaxCtx - n_tokens + 1}) {
              const int64_t stride = (n_q + 1) * head_dim;  // room for other heads
              std::vector<float> q(n_tokens * stride);
              for (float& x : q) x = rng.Bell();
              std::vector<float> got(q.size(), -1.0f), want(q.size(), -1.0f);
              AttentionScratch scratch;
              PagedAttentionTile(pages, kernels, 1, 1, table, n_ctx, n_tokens, q.data(), stride,
                                 n_q, 0.125f, &scratch, got.data(), stride);
              for (int i = 0; i < n_tokens; ++i) {
                PagedAttentionGroup(pages, kernels, 1, 1, table, n_ctx + i, q.data() + i * stride,
                                    n_q, 0.125f, &scratch, want.data() + i * stride);
              }
              for (size_t i = 0; i < got.size(); ++i) {
                ASSERT_EQ(got[i], want[i])
                    << TensorTypeName(type) << " head_dim " << head_dim << " n_q " << n_q
                    << " tokens " << n_tokens << " n_ctx " << n_ctx << " at " << i;
              }
            }
          }
        }
      }
    }
  }
}

// Attention over one head computed directly in double from the stored f32
// rows: softmax(scale · q·K) · V over positions [0, n_ctx).
std::vector<double> DirectAttention(const CpuKvPages& pages, const std::vector<int32_t>& table,
                                    int n_ctx, const float* q, float scale) {
  const KvLayout& layout = pages.layout();
  const int d = layout.head_dim;
  std::vector<double> scores(n_ctx);
  double top = -INFINITY;
  for (int j = 0; j < n_ctx; ++j) {
    const auto* k = reinterpret_cast<const float*>(
        pages.KRow(0, table[j / layout.block_size], j % layout.block_size, 0));
    double dot = 0.0;
    for (int i = 0; i < d; ++i) dot += static_cast<double>(k[i]) * q[i];
    scores[j] = dot * scale;
    top = std::max(top, scores[j]);
  }
  double sum = 0.0;
  for (double& s : scores) sum += (s = std::exp(s - top));
  std::vector<double> out(d, 0.0);
  for (int j = 0; j < n_ctx; ++j) {
    const auto* v = reinterpret_cast<const float*>(
        pages.VRow(0, table[j / layout.block_size], j % layout.block_size, 0));
    for (int i = 0; i < d; ++i) out[i] += scores[j] / sum * v[i];
  }
  return out;
}

// Contexts longer than a partition are attended partition by partition and
// combined: the result is softmax attention over the whole context, to float
// accuracy, wherever the largest scores lie (here one dominant position in a
// late partition, and in the first).
TEST(PagedAttentionTest, PartitionsCombineToAttentionOverTheWholeContext) {
  KvLayout layout = SmallLayout(TensorType::kF32, TensorType::kF32);
  layout.n_layer = 1;
  layout.n_head_kv = 1;
  layout.block_size = 16;
  constexpr int kMaxCtx = 3 * kAttentionPartition + 100;
  std::vector<int32_t> table(kMaxCtx / layout.block_size + 1);
  for (size_t i = 0; i < table.size(); ++i) {
    table[i] = static_cast<int32_t>((11 * i + 5) % table.size());
  }
  CpuKvPages pages(layout, static_cast<int>(table.size()));
  FillPositions(&pages, table, kMaxCtx);
  kernels::TestRandom rng(77);
  const std::vector<float> q = kernels::MakeTestRow(rng, layout.head_dim);
  EXPECT_EQ(AttentionPartitions(kAttentionPartition), 1);
  EXPECT_EQ(AttentionPartitions(kAttentionPartition + 1), 2);
  for (int hot : {-1, 5, 2 * kAttentionPartition + 7}) {
    if (hot >= 0) {  // a K row along q: this position takes most of the weight
      auto* k = reinterpret_cast<float*>(
          pages.KRow(0, table[hot / layout.block_size], hot % layout.block_size, 0));
      for (int i = 0; i < layout.head_dim; ++i) k[i] = q[i];
    }
    for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::ActiveIsa()}) {
      const AttentionKernels kernels = AttentionKernels::For(layout, isa);
      for (int n_ctx :
           {kAttentionPartition, kAttentionPartition + 1, 2 * kAttentionPartition + 8, kMaxCtx}) {
        AttentionScratch scratch;
        std::vector<float> got(layout.head_dim);
        PagedAttention(pages, kernels, 0, 0, table, n_ctx, q.data(), 0.125f, &scratch, got.data());
        const std::vector<double> want = DirectAttention(pages, table, n_ctx, q.data(), 0.125f);
        double norm = 0.0;
        for (double w : want) norm = std::max(norm, std::abs(w));
        for (int i = 0; i < layout.head_dim; ++i) {
          ASSERT_NEAR(got[i], want[i], 2e-6 * norm)
              << kernels::IsaName(isa) << " n_ctx " << n_ctx << " hot " << hot << " d " << i;
        }
      }
    }
  }
}

// A tile whose tokens straddle partition boundaries gives each head what it
// gets alone, bit for bit, and the partitions computed one by one, in any
// order and with their own scratch, combine to the same bits: how they are
// scheduled over threads changes nothing.
TEST(PagedAttentionTest, PartitionedTilesEqualEachTokenAlone) {
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::ActiveIsa()}) {
    SCOPED_TRACE(kernels::IsaName(isa));
    for (TensorType type : {TensorType::kF16, TensorType::kQ4_0}) {
      KvLayout layout = SmallLayout(type, type);
      layout.block_size = 16;
      constexpr int kMaxCtx = 2 * kAttentionPartition + 40;
      std::vector<int32_t> table(kMaxCtx / layout.block_size + 1);
      for (size_t i = 0; i < table.size(); ++i) {
        table[i] = static_cast<int32_t>((7 * i + 3) % table.size());
      }
      CpuKvPages pages(layout, static_cast<int>(table.size()));
      FillPositions(&pages, table, kMaxCtx);
      const AttentionKernels kernels = AttentionKernels::For(layout, isa);
      kernels::TestRandom rng(5);
      constexpr int n_q = 2;
      for (int n_tokens : {1, 3, 4}) {
        for (int n_ctx : {kAttentionPartition - 1, kAttentionPartition, 2 * kAttentionPartition + 2,
                          kAttentionPartition - 2}) {
          const int64_t stride = (n_q + 1) * layout.head_dim;
          std::vector<float> q(n_tokens * stride);
          for (float& x : q) x = rng.Bell();
          std::vector<float> got(q.size(), -1.0f), want(q.size(), -1.0f);
          AttentionScratch scratch;
          PagedAttentionTile(pages, kernels, 1, 1, table, n_ctx, n_tokens, q.data(), stride, n_q,
                             0.125f, &scratch, got.data(), stride);
          for (int i = 0; i < n_tokens; ++i) {
            PagedAttentionGroup(pages, kernels, 1, 1, table, n_ctx + i, q.data() + i * stride, n_q,
                                0.125f, &scratch, want.data() + i * stride);
          }
          // The partitions last to first, each with fresh scratch.
          const int parts = AttentionPartitions(n_ctx + n_tokens - 1);
          const int heads = n_tokens * n_q;
          std::vector<float> outputs(static_cast<size_t>(parts) * heads * layout.head_dim);
          std::vector<PartialSoftmax> softmax(static_cast<size_t>(parts) * heads);
          for (int p = parts - 1; p >= 0; --p) {
            AttentionScratch fresh;
            PagedAttentionTilePart(pages, kernels, 1, 1, table, p, n_ctx, n_tokens, q.data(),
                                   stride, n_q, 0.125f, &fresh,
                                   outputs.data() + p * heads * layout.head_dim,
                                   n_q * layout.head_dim, softmax.data() + p * heads);
          }
          std::vector<float> split(q.size(), -1.0f);
          for (int h = 0; h < heads; ++h) {
            CombinePartitions(outputs.data() + h * layout.head_dim, heads * layout.head_dim,
                              softmax.data() + h, heads, AttentionPartitions(n_ctx + h / n_q),
                              layout.head_dim,
                              split.data() + (h / n_q) * stride + (h % n_q) * layout.head_dim);
          }
          for (size_t i = 0; i < got.size(); ++i) {
            ASSERT_EQ(got[i], want[i]) << TensorTypeName(type) << " tokens " << n_tokens
                                       << " n_ctx " << n_ctx << " at " << i;
            ASSERT_EQ(split[i], got[i]) << TensorTypeName(type) << " tokens " << n_tokens
                                        << " n_ctx " << n_ctx << " at " << i;
          }
        }
      }
    }
  }
}

// A window and a soft cap (Gemma 2's attention), against their definitions
// computed in double from the same K and V: a query at position p attends
// [p - window + 1, p], each score becomes cap · tanh(score / cap).
TEST(PagedAttentionTest, WindowAndSoftCapFollowTheirDefinitions) {
  const KvLayout layout = SmallLayout(TensorType::kF32, TensorType::kF32);
  constexpr int kContext = 40;
  std::vector<int32_t> table(kContext / layout.block_size);
  std::iota(table.begin(), table.end(), 0);
  CpuKvPages pages(layout, static_cast<int>(table.size()));
  FillPositions(&pages, table, kContext);
  // The rows FillPositions wrote for layer 1, head 0.
  std::vector<std::vector<float>> k, v;
  kernels::TestRandom rows(1000 * 1 + 10 * 0 + 1);
  for (int j = 0; j < kContext; ++j) {
    k.push_back(kernels::MakeTestRow(rows, layout.head_dim));
    v.push_back(kernels::MakeTestRow(rows, layout.head_dim));
  }
  kernels::TestRandom rng(9);
  const std::vector<float> q = kernels::MakeTestRow(rng, layout.head_dim);
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::ActiveIsa()}) {
    const AttentionKernels kernels = AttentionKernels::For(layout, isa);
    for (const ScoreRule& rule :
         {ScoreRule(0.125f, 0.0f, 7), ScoreRule(0.125f, 0.5f, 0), ScoreRule(0.125f, 0.5f, 13)}) {
      for (int n_ctx : {1, 6, 7, 8, 20, kContext}) {
        const int first = rule.window > 0 ? std::max(0, n_ctx - rule.window) : 0;
        std::vector<double> score;
        for (int j = first; j < n_ctx; ++j) {
          double s = 0.0;
          for (int d = 0; d < layout.head_dim; ++d) s += static_cast<double>(q[d]) * k[j][d];
          s *= rule.scale;
          if (rule.softcap > 0.0f) s = rule.softcap * std::tanh(s / rule.softcap);
          score.push_back(s);
        }
        const double top = *std::max_element(score.begin(), score.end());
        double sum = 0.0;
        for (double& s : score) sum += (s = std::exp(s - top));
        std::vector<double> want(layout.head_dim, 0.0);
        for (int j = first; j < n_ctx; ++j) {
          for (int d = 0; d < layout.head_dim; ++d) want[d] += score[j - first] / sum * v[j][d];
        }
        AttentionScratch scratch;
        std::vector<float> got(layout.head_dim);
        PagedAttention(pages, kernels, 1, 0, table, n_ctx, q.data(), rule, &scratch, got.data());
        for (int d = 0; d < layout.head_dim; ++d) {
          ASSERT_NEAR(got[d], want[d], 1e-5) << kernels::IsaName(isa) << " window " << rule.window
                                             << " cap " << rule.softcap << " n_ctx " << n_ctx;
        }
      }
    }
  }
}

// With a window and a cap, tiles and partitions still give each token what
// it gets alone, bit for bit, also where the window crosses a partition
// boundary.
TEST(PagedAttentionTest, WindowedTilesAndPartitionsEqualEachTokenAlone) {
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::ActiveIsa()}) {
    SCOPED_TRACE(kernels::IsaName(isa));
    KvLayout layout = SmallLayout(TensorType::kF16, TensorType::kF16);
    layout.block_size = 16;
    constexpr int kMaxCtx = kAttentionPartition + 64;
    std::vector<int32_t> table(kMaxCtx / layout.block_size + 1);
    std::iota(table.begin(), table.end(), 0);
    CpuKvPages pages(layout, static_cast<int>(table.size()));
    FillPositions(&pages, table, kMaxCtx);
    const AttentionKernels kernels = AttentionKernels::For(layout, isa);
    kernels::TestRandom rng(6);
    constexpr int n_q = 2;
    const ScoreRule rule(0.125f, 0.5f, 100);
    for (int n_tokens : {1, 3}) {
      for (int n_ctx : {5, 150, kAttentionPartition - 1, kAttentionPartition + 30}) {
        const int64_t stride = n_q * layout.head_dim;
        std::vector<float> q(n_tokens * stride);
        for (float& x : q) x = rng.Bell();
        std::vector<float> got(q.size(), -1.0f), want(q.size(), -1.0f);
        AttentionScratch scratch;
        PagedAttentionTile(pages, kernels, 1, 1, table, n_ctx, n_tokens, q.data(), stride, n_q,
                           rule, &scratch, got.data(), stride);
        for (int i = 0; i < n_tokens; ++i) {
          PagedAttentionGroup(pages, kernels, 1, 1, table, n_ctx + i, q.data() + i * stride, n_q,
                              rule, &scratch, want.data() + i * stride);
        }
        for (size_t i = 0; i < got.size(); ++i) {
          ASSERT_EQ(got[i], want[i]) << "tokens " << n_tokens << " n_ctx " << n_ctx << " at " << i;
        }
      }
    }
  }
}

}  // namespace
}  // namespace kvmesh
