#include "worker/runtime/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "worker/kernels/cpu/ops.h"

namespace kvmesh {

AttentionKernels AttentionKernels::For(const KvLayout& layout, kernels::Isa isa) {
  const KvRowKernels* k = GetKvRowKernels(layout.k_type, isa);
  const KvRowKernels* v = GetKvRowKernels(layout.v_type, isa);
  KVMESH_CHECK(k != nullptr && v != nullptr);
  const kernels::TypeTraits* k_traits = kernels::GetTypeTraits(layout.k_type);
  KVMESH_CHECK(k_traits != nullptr);
  const kernels::TypeTraits* q_traits = kernels::GetTypeTraits(k_traits->vec_dot_type);
  KVMESH_CHECK(q_traits != nullptr);
  return AttentionKernels{
      q_traits,
      *k,
      *v,
      GetKvBlockKernels(layout.k_type, k->isa),
      GetKvBlockKernels(layout.v_type, v->isa),
      layout.v_type == TensorType::kF16 ? kernels::GetRowOps(v->isa).round_to_half : nullptr,
      kernels::GetRowOps(k->isa).exp_shifted,
      kernels::GetRowOps(k->isa).scale};
}

namespace {

// rows[j] = the K (or V) row of position j < n_ctx, walking the block table a
// block at a time (no division per position).
template <typename RowOf>
void LocateRows(std::span<const int32_t> block_table, int bs, int n_ctx, RowOf row_of,
                const uint8_t** rows) {
  for (int j0 = 0, b = 0; j0 < n_ctx; j0 += bs, ++b) {
    const int n = std::min(bs, n_ctx - j0);
    const uint8_t* first = row_of(block_table[b], 0);
    const size_t stride = n > 1 ? static_cast<size_t>(row_of(block_table[b], 1) - first) : 0;
    for (int s = 0; s < n; ++s) rows[j0 + s] = first + s * stride;
  }
}

// The largest of x[0..n), n >= 1 (scores are never NaN). Eight running
// maxima, so that the loop vectorises without reassociating one chain.
float MaxOf(const float* x, int n) {
  constexpr int kLanes = 8;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -INFINITY);
  int j = 0;
  for (; j + kLanes <= n; j += kLanes) {
    for (int i = 0; i < kLanes; ++i) lanes[i] = lanes[i] < x[j + i] ? x[j + i] : lanes[i];
  }
  for (; j < n; ++j) lanes[0] = lanes[0] < x[j] ? x[j] : lanes[0];
  return *std::max_element(lanes, lanes + kLanes);
}

}  // namespace

void PagedAttentionGroup(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                         int kv_head, std::span<const int32_t> block_table, int n_ctx,
                         const float* q, int n_q, float scale, AttentionScratch* scratch,
                         float* out) {
  KVMESH_CHECK(n_q >= 1 && n_q <= kMaxQueryHeadsPerKvHead);
  const KvLayout& layout = pages.layout();
  const int head_dim = layout.head_dim;
  const int bs = layout.block_size;

  // Each query head's arithmetic is exactly that of a lone head; the group
  // only shares the walk over K and V rows (one row address per position,
  // one load into cache for all n_q heads).
  const size_t query_bytes = kernels::RowSizeBytes(*kernels.query_traits, head_dim);
  scratch->query.resize(query_bytes * n_q);
  for (int g = 0; g < n_q; ++g) {
    kernels.query_traits->from_float(q + g * head_dim, scratch->query.data() + g * query_bytes,
                                     head_dim);
  }
  scratch->scores.resize(static_cast<size_t>(n_ctx) * n_q);
  float* scores = scratch->scores.data();  // [n_q][n_ctx]
  float max_score[kMaxQueryHeadsPerKvHead];
  scratch->rows.resize(n_ctx);
  const uint8_t** rows = scratch->rows.data();
  LocateRows(
      block_table, bs, n_ctx,
      [&](int32_t block, int slot) { return pages.KRow(layer, block, slot, kv_head); }, rows);
  if (kernels.k_blocks == nullptr ||
      !kernels.k_blocks->scores(head_dim, rows, n_ctx, scratch->query.data(), n_q, scale, scores,
                                max_score)) {
    std::fill(max_score, max_score + n_q, -INFINITY);
    for (int j = 0; j < n_ctx; ++j) {
      for (int g = 0; g < n_q; ++g) {
        float& s = scores[g * n_ctx + j];
        s = kernels.k.dot(head_dim, rows[j], scratch->query.data() + g * query_bytes) * scale;
        max_score[g] = std::max(max_score[g], s);
      }
    }
  }
  for (int g = 0; g < n_q; ++g) {
    float* sg = scores + g * n_ctx;
    const double sum = kernels.exp_shifted(sg, n_ctx, max_score[g]);
    kernels.scale(sg, n_ctx, static_cast<float>(1.0 / sum));
    if (kernels.round_weights != nullptr) kernels.round_weights(sg, n_ctx);
  }

  LocateRows(
      block_table, bs, n_ctx,
      [&](int32_t block, int slot) { return pages.VRow(layer, block, slot, kv_head); }, rows);
  if (kernels.v_blocks != nullptr &&
      kernels.v_blocks->weighted_sum(head_dim, rows, n_ctx, scores, n_ctx, n_q, out)) {
    return;
  }
  std::fill(out, out + static_cast<size_t>(head_dim) * n_q, 0.0f);
  for (int j = 0; j < n_ctx; ++j) {
    for (int g = 0; g < n_q; ++g) {
      kernels.v.accumulate(head_dim, rows[j], scores[g * n_ctx + j], out + g * head_dim);
    }
  }
}

void PagedAttention(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                    int kv_head, std::span<const int32_t> block_table, int n_ctx, const float* q,
                    float scale, AttentionScratch* scratch, float* out) {
  PagedAttentionGroup(pages, kernels, layer, kv_head, block_table, n_ctx, q, 1, scale, scratch,
                      out);
}

void PagedAttentionTile(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                        int kv_head, std::span<const int32_t> block_table, int n_ctx, int n_tokens,
                        const float* q, int64_t q_stride, int n_q, float scale,
                        AttentionScratch* scratch, float* out, int64_t out_stride) {
  const int total = n_tokens * n_q;
  KVMESH_CHECK(n_tokens >= 1 && n_q >= 1 && total <= kMaxQueryHeadsPerKvHead);
  auto one_by_one = [&] {
    for (int i = 0; i < n_tokens; ++i) {
      PagedAttentionGroup(pages, kernels, layer, kv_head, block_table, n_ctx + i, q + i * q_stride,
                          n_q, scale, scratch, out + i * out_stride);
    }
  };
  if (n_tokens == 1 || kernels.k_blocks == nullptr || kernels.v_blocks == nullptr) {
    one_by_one();
    return;
  }
  const KvLayout& layout = pages.layout();
  const int head_dim = layout.head_dim;
  const int n_max = n_ctx + n_tokens - 1;  // the last token's context

  const size_t query_bytes = kernels::RowSizeBytes(*kernels.query_traits, head_dim);
  scratch->query.resize(query_bytes * total);
  for (int h = 0; h < total; ++h) {
    const float* head = q + (h / n_q) * q_stride + (h % n_q) * head_dim;
    kernels.query_traits->from_float(head, scratch->query.data() + h * query_bytes, head_dim);
  }
  scratch->scores.resize(static_cast<size_t>(n_max) * total);
  float* scores = scratch->scores.data();  // [total][n_max]
  float max_score[kMaxQueryHeadsPerKvHead];
  scratch->rows.resize(n_max);
  const uint8_t** rows = scratch->rows.data();
  LocateRows(
      block_table, layout.block_size, n_max,
      [&](int32_t block, int slot) { return pages.KRow(layer, block, slot, kv_head); }, rows);
  if (!kernels.k_blocks->scores(head_dim, rows, n_max, scratch->query.data(), total, scale, scores,
                                max_score)) {
    one_by_one();
    return;
  }
  for (int h = 0; h < total; ++h) {
    const int n = n_ctx + h / n_q;  // this head's context
    float* sg = scores + static_cast<size_t>(h) * n_max;
    // Over its own positions only, as it would be alone.
    const float max = n < n_max ? MaxOf(sg, n) : max_score[h];
    const double sum = kernels.exp_shifted(sg, n, max);
    kernels.scale(sg, n, static_cast<float>(1.0 / sum));
    if (kernels.round_weights != nullptr) kernels.round_weights(sg, n);
  }
  LocateRows(
      block_table, layout.block_size, n_max,
      [&](int32_t block, int slot) { return pages.VRow(layer, block, slot, kv_head); }, rows);
  scratch->outputs.resize(static_cast<size_t>(total) * head_dim);
  float* outputs = scratch->outputs.data();
  // Every head over the positions all share, in one walk; then each later
  // token's own last positions, continuing the same fma chain with the row
  // kernel (so no head ever reads a row past its context: a zero weight on
  // an infinite V value would not add nothing). Scores rows are n_max apart;
  // the shared walk reads their first n_ctx.
  const bool shared =
      kernels.v_blocks->weighted_sum(head_dim, rows, n_ctx, scores, n_max, total, outputs);
  if (!shared) std::fill(outputs, outputs + static_cast<size_t>(total) * head_dim, 0.0f);
  for (int h = 0; h < total; ++h) {
    const int n = n_ctx + h / n_q;
    for (int j = shared ? n_ctx : 0; j < n; ++j) {
      kernels.v.accumulate(head_dim, rows[j], scores[static_cast<size_t>(h) * n_max + j],
                           outputs + h * head_dim);
    }
  }
  for (int h = 0; h < total; ++h) {
    std::copy_n(outputs + h * head_dim, head_dim,
                out + (h / n_q) * out_stride + (h % n_q) * head_dim);
  }
}

}  // namespace kvmesh
