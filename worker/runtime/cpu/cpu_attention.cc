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

// rows[j] = the K (or V) row of position begin + j, for begin <= begin + j <
// end, walking the block table a block at a time (no division per position).
template <typename RowOf>
void LocateRows(std::span<const int32_t> block_table, int bs, int begin, int end, RowOf row_of,
                const uint8_t** rows) {
  for (int p = begin; p < end;) {
    const int b = p / bs;
    const int slot = p - b * bs;
    const int n = std::min(bs - slot, end - p);
    const uint8_t* first = row_of(block_table[b], slot);
    const size_t stride = n > 1 ? static_cast<size_t>(row_of(block_table[b], slot + 1) - first) : 0;
    for (int s = 0; s < n; ++s) rows[p - begin + s] = first + s * stride;
    p += n;
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

// Softmax weights in place over sg[0..n) given their max: exps, the
// normalisation, the f16 rounding where V is f16. Returns the exps' sum.
double SoftmaxWeights(const AttentionKernels& kernels, float* sg, int n, float max) {
  const double sum = kernels.exp_shifted(sg, n, max);
  kernels.scale(sg, n, static_cast<float>(1.0 / sum));
  if (kernels.round_weights != nullptr) kernels.round_weights(sg, n);
  return sum;
}

// PagedAttentionGroup over positions [begin, end) only (end > begin), each
// head's softmax normalised over them; parts[g] (where given) gets head g's
// max and sum of exps.
void GroupRange(const CpuKvPages& pages, const AttentionKernels& kernels, int layer, int kv_head,
                std::span<const int32_t> block_table, int begin, int end, const float* q, int n_q,
                const ScoreRule& rule, AttentionScratch* scratch, float* out,
                PartialSoftmax* parts) {
  KVMESH_CHECK(n_q >= 1 && n_q <= kMaxQueryHeadsPerKvHead && end > begin);
  const KvLayout& layout = pages.layout();
  const int head_dim = layout.head_dim;
  const int bs = layout.block_size;
  const int n = end - begin;

  // Each query head's arithmetic is exactly that of a lone head; the group
  // only shares the walk over K and V rows (one row address per position,
  // one load into cache for all n_q heads).
  const size_t query_bytes = kernels::RowSizeBytes(*kernels.query_traits, head_dim);
  scratch->query.resize(query_bytes * n_q);
  for (int g = 0; g < n_q; ++g) {
    kernels.query_traits->from_float(q + g * head_dim, scratch->query.data() + g * query_bytes,
                                     head_dim);
  }
  scratch->scores.resize(static_cast<size_t>(n) * n_q);
  float* scores = scratch->scores.data();  // [n_q][n]
  float max_score[kMaxQueryHeadsPerKvHead];
  scratch->rows.resize(n);
  const uint8_t** rows = scratch->rows.data();
  LocateRows(
      block_table, bs, begin, end,
      [&](int32_t block, int slot) { return pages.KRow(layer, block, slot, kv_head); }, rows);
  if (kernels.k_blocks == nullptr ||
      !kernels.k_blocks->scores(head_dim, rows, n, scratch->query.data(), n_q, rule.scale, scores,
                                max_score)) {
    std::fill(max_score, max_score + n_q, -INFINITY);
    for (int j = 0; j < n; ++j) {
      for (int g = 0; g < n_q; ++g) {
        float& s = scores[g * n + j];
        s = kernels.k.dot(head_dim, rows[j], scratch->query.data() + g * query_bytes) * rule.scale;
        max_score[g] = std::max(max_score[g], s);
      }
    }
  }
  if (rule.softcap > 0.0f) {
    // cap · tanh(s · (1 / cap)) is increasing, so the max maps to the max.
    const float inv = 1.0f / rule.softcap;
    for (int g = 0; g < n_q; ++g) {
      for (int j = 0; j < n; ++j) {
        float& s = scores[g * n + j];
        s = rule.softcap * std::tanh(s * inv);
      }
      max_score[g] = rule.softcap * std::tanh(max_score[g] * inv);
    }
  }
  for (int g = 0; g < n_q; ++g) {
    const double sum = SoftmaxWeights(kernels, scores + g * n, n, max_score[g]);
    if (parts != nullptr) parts[g] = {max_score[g], sum};
  }

  LocateRows(
      block_table, bs, begin, end,
      [&](int32_t block, int slot) { return pages.VRow(layer, block, slot, kv_head); }, rows);
  if (kernels.v_blocks != nullptr &&
      kernels.v_blocks->weighted_sum(head_dim, rows, n, scores, n, n_q, out)) {
    return;
  }
  std::fill(out, out + static_cast<size_t>(head_dim) * n_q, 0.0f);
  for (int j = 0; j < n; ++j) {
    for (int g = 0; g < n_q; ++g) {
      kernels.v.accumulate(head_dim, rows[j], scores[g * n + j], out + g * head_dim);
    }
  }
}

// PagedAttentionTilePart's work (contract in the header).
void TileRange(const CpuKvPages& pages, const AttentionKernels& kernels, int layer, int kv_head,
               std::span<const int32_t> block_table, int begin, int end, int n_ctx, int n_tokens,
               const float* q, int64_t q_stride, int n_q, const ScoreRule& rule,
               AttentionScratch* scratch, float* out, int64_t out_stride, PartialSoftmax* parts) {
  KVMESH_CHECK(n_tokens >= 1 && n_q >= 1 && n_tokens * n_q <= kMaxQueryHeadsPerKvHead);
  const int head_dim = pages.layout().head_dim;
  // Token i attends [start(i), stop(i)); the tokens before `first` see none
  // of the range.
  auto stop = [&](int i) { return std::min(end, n_ctx + i); };
  auto start = [&](int i) {
    return rule.window > 0 ? std::max(begin, n_ctx + i - rule.window) : begin;
  };
  int first = 0;
  while (first < n_tokens && stop(first) <= begin) {
    std::fill_n(out + first * out_stride, static_cast<size_t>(n_q) * head_dim, 0.0f);
    if (parts != nullptr) std::fill_n(parts + first * n_q, n_q, PartialSoftmax{-INFINITY, 0.0});
    ++first;
  }
  if (first == n_tokens) return;
  q += first * q_stride;
  out += first * out_stride;
  if (parts != nullptr) parts += first * n_q;
  n_ctx += first;
  n_tokens -= first;

  auto one_by_one = [&] {
    for (int i = 0; i < n_tokens; ++i) {
      if (start(i) >= stop(i)) {  // the window ends before this range
        std::fill_n(out + i * out_stride, static_cast<size_t>(n_q) * head_dim, 0.0f);
        if (parts != nullptr) std::fill_n(parts + i * n_q, n_q, PartialSoftmax{-INFINITY, 0.0});
        continue;
      }
      GroupRange(pages, kernels, layer, kv_head, block_table, start(i), stop(i), q + i * q_stride,
                 n_q, rule, scratch, out + i * out_stride,
                 parts != nullptr ? parts + i * n_q : nullptr);
    }
  };
  // The shared walk below assumes every token starts at `begin` and scores
  // without a cap: windows and caps take the token-by-token path.
  if (n_tokens == 1 || kernels.k_blocks == nullptr || kernels.v_blocks == nullptr ||
      rule.window > 0 || rule.softcap > 0.0f) {
    one_by_one();
    return;
  }
  const KvLayout& layout = pages.layout();
  const int total = n_tokens * n_q;
  const int n_min = stop(0) - begin;             // positions every token attends
  const int n_max = stop(n_tokens - 1) - begin;  // the last token's

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
      block_table, layout.block_size, begin, begin + n_max,
      [&](int32_t block, int slot) { return pages.KRow(layer, block, slot, kv_head); }, rows);
  if (!kernels.k_blocks->scores(head_dim, rows, n_max, scratch->query.data(), total, rule.scale,
                                scores, max_score)) {
    one_by_one();
    return;
  }
  for (int h = 0; h < total; ++h) {
    const int n = stop(h / n_q) - begin;  // this head's positions
    float* sg = scores + static_cast<size_t>(h) * n_max;
    // Over its own positions only, as it would be alone.
    const float max = n < n_max ? MaxOf(sg, n) : max_score[h];
    const double sum = SoftmaxWeights(kernels, sg, n, max);
    if (parts != nullptr) parts[h] = {max, sum};
  }
  LocateRows(
      block_table, layout.block_size, begin, begin + n_max,
      [&](int32_t block, int slot) { return pages.VRow(layer, block, slot, kv_head); }, rows);
  scratch->outputs.resize(static_cast<size_t>(total) * head_dim);
  float* outputs = scratch->outputs.data();
  // Every head over the positions all share, in one walk; then each later
  // token's own last positions, continuing the same fma chain with the row
  // kernel (so no head ever reads a row past its context: a zero weight on
  // an infinite V value would not add nothing). Scores rows are n_max apart;
  // the shared walk reads their first n_min.
  const bool shared =
      kernels.v_blocks->weighted_sum(head_dim, rows, n_min, scores, n_max, total, outputs);
  if (!shared) std::fill(outputs, outputs + static_cast<size_t>(total) * head_dim, 0.0f);
  for (int h = 0; h < total; ++h) {
    const int n = stop(h / n_q) - begin;
    for (int j = shared ? n_min : 0; j < n; ++j) {
      kernels.v.accumulate(head_dim, rows[j], scores[static_cast<size_t>(h) * n_max + j],
                           outputs + h * head_dim);
    }
  }
  for (int h = 0; h < total; ++h) {
    std::copy_n(outputs + h * head_dim, head_dim,
                out + (h / n_q) * out_stride + (h % n_q) * head_dim);
  }
}

// Partitions of a context of n positions.
int PartitionsOf(int n) { return (n + kAttentionPartition - 1) / kAttentionPartition; }

}  // namespace

int AttentionPartitions(int n_ctx) { return std::max(1, PartitionsOf(n_ctx)); }

void CombinePartitions(const float* part_outputs, int64_t part_stride, const PartialSoftmax* parts,
                       int64_t parts_stride, int n_parts, int head_dim, float* out) {
  float top = -INFINITY;
  for (int p = 0; p < n_parts; ++p) top = std::max(top, parts[p * parts_stride].max);
  // Partition p's share of the whole softmax: its sum of exps, rescaled from
  // its own max to the largest; none for an empty partition, or one whose
  // max is under the largest by more than ExpShifted keeps (its weights
  // would be 0 in one pass too, and a subnormal weight here is slow).
  auto mass = [&](int p) {
    const PartialSoftmax& part = parts[p * parts_stride];
    if (part.sum == 0.0 || part.max - top < kernels::kExpShiftedFloor) return 0.0;
    return part.sum * std::exp(static_cast<double>(part.max - top));
  };
  double total = 0.0;
  for (int p = 0; p < n_parts; ++p) total += mass(p);
  std::fill_n(out, head_dim, 0.0f);
  for (int p = 0; p < n_parts; ++p) {
    const float w = static_cast<float>(mass(p) / total);
    if (w == 0.0f) continue;
    const float* o = part_outputs + p * part_stride;
    for (int d = 0; d < head_dim; ++d) out[d] = std::fma(w, o[d], out[d]);
  }
}

void PagedAttentionTilePart(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                            int kv_head, std::span<const int32_t> block_table, int partition,
                            int n_ctx, int n_tokens, const float* q, int64_t q_stride, int n_q,
                            const ScoreRule& rule, AttentionScratch* scratch, float* out,
                            int64_t out_stride, PartialSoftmax* parts) {
  const int begin = partition * kAttentionPartition;
  TileRange(pages, kernels, layer, kv_head, block_table, begin, begin + kAttentionPartition, n_ctx,
            n_tokens, q, q_stride, n_q, rule, scratch, out, out_stride, parts);
}

void PagedAttentionTile(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                        int kv_head, std::span<const int32_t> block_table, int n_ctx, int n_tokens,
                        const float* q, int64_t q_stride, int n_q, const ScoreRule& rule,
                        AttentionScratch* scratch, float* out, int64_t out_stride) {
  const int n_parts = AttentionPartitions(n_ctx + n_tokens - 1);
  if (n_parts == 1) {
    TileRange(pages, kernels, layer, kv_head, block_table, 0, n_ctx + n_tokens - 1, n_ctx, n_tokens,
              q, q_stride, n_q, rule, scratch, out, out_stride, nullptr);
    return;
  }
  // Each partition's outputs and softmax, then their combination per head.
  const int head_dim = pages.layout().head_dim;
  const int heads = n_tokens * n_q;
  const int64_t part_floats = static_cast<int64_t>(heads) * head_dim;
  std::vector<float>& partials = scratch->partials;
  std::vector<PartialSoftmax>& softmax = scratch->partial_softmax;
  partials.resize(static_cast<size_t>(n_parts * part_floats));
  softmax.resize(static_cast<size_t>(n_parts) * heads);
  for (int p = 0; p < n_parts; ++p) {
    PagedAttentionTilePart(pages, kernels, layer, kv_head, block_table, p, n_ctx, n_tokens, q,
                           q_stride, n_q, rule, scratch, partials.data() + p * part_floats,
                           static_cast<int64_t>(n_q) * head_dim, softmax.data() + p * heads);
  }
  for (int h = 0; h < heads; ++h) {
    CombinePartitions(partials.data() + static_cast<int64_t>(h) * head_dim, part_floats,
                      softmax.data() + h, heads, AttentionPartitions(n_ctx + h / n_q), head_dim,
                      out + (h / n_q) * out_stride + (h % n_q) * head_dim);
  }
}

void PagedAttentionGroup(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                         int kv_head, std::span<const int32_t> block_table, int n_ctx,
                         const float* q, int n_q, const ScoreRule& rule, AttentionScratch* scratch,
                         float* out) {
  if (AttentionPartitions(n_ctx) == 1) {
    const int begin = rule.window > 0 ? std::max(0, n_ctx - rule.window) : 0;
    GroupRange(pages, kernels, layer, kv_head, block_table, begin, n_ctx, q, n_q, rule, scratch,
               out, nullptr);
    return;
  }
  PagedAttentionTile(pages, kernels, layer, kv_head, block_table, n_ctx, 1, q, 0, n_q, rule,
                     scratch, out, 0);
}

void PagedAttention(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                    int kv_head, std::span<const int32_t> block_table, int n_ctx, const float* q,
                    const ScoreRule& rule, AttentionScratch* scratch, float* out) {
  PagedAttentionGroup(pages, kernels, layer, kv_head, block_table, n_ctx, q, 1, rule, scratch, out);
}

}  // namespace kvmesh
