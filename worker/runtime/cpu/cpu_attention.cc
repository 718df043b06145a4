#include "worker/runtime/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>

#include "common/half.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh {

void PagedAttention(const CpuKvPages& pages, int layer, int kv_head,
                    std::span<const int32_t> block_table, int n_ctx, const float* q, float scale,
                    AttentionScratch* scratch, float* out) {
  const KvLayout& layout = pages.layout();
  const int head_dim = layout.head_dim;
  const int bs = layout.block_size;
  const kernels::TypeTraits* k_traits = kernels::GetTypeTraits(layout.k_type);
  const kernels::TypeTraits* q_traits = kernels::GetTypeTraits(k_traits->vec_dot_type);
  const kernels::TypeTraits* v_traits = kernels::GetTypeTraits(layout.v_type);

  scratch->query.resize(kernels::RowSizeBytes(*q_traits, head_dim));
  q_traits->from_float(q, scratch->query.data(), head_dim);

  scratch->scores.resize(n_ctx);
  float* scores = scratch->scores.data();
  float max_score = -INFINITY;
  for (int j = 0; j < n_ctx; ++j) {
    const uint8_t* k = pages.KRow(layer, block_table[j / bs], j % bs, kv_head);
    scores[j] = k_traits->vec_dot(head_dim, k, scratch->query.data()) * scale;
    max_score = std::max(max_score, scores[j]);
  }
  double sum = 0.0;
  for (int j = 0; j < n_ctx; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  const bool round_weights = layout.v_type == TensorType::kF16;
  for (int j = 0; j < n_ctx; ++j) {
    float w = scores[j] * inv_sum;
    if (round_weights) w = HalfToFloat(FloatToHalf(w));
    scores[j] = w;
  }

  std::fill(out, out + head_dim, 0.0f);
  scratch->v_row.resize(head_dim);
  float* v = scratch->v_row.data();
  for (int j = 0; j < n_ctx; ++j) {
    const uint8_t* vrow = pages.VRow(layer, block_table[j / bs], j % bs, kv_head);
    v_traits->to_float(vrow, v, head_dim);
    const float w = scores[j];
    for (int d = 0; d < head_dim; ++d) out[d] += w * v[d];
  }
}

}  // namespace kvmesh
