#include "worker/runtime/cpu/cpu_attention.h"

#include <algorithm>
#include <cmath>

#include "common/check.h"
#include "common/half.h"

namespace kvmesh {

AttentionKernels AttentionKernels::For(const KvLayout& layout, kernels::Isa isa) {
  const KvRowKernels* k = GetKvRowKernels(layout.k_type, isa);
  const KvRowKernels* v = GetKvRowKernels(layout.v_type, isa);
  KVMESH_CHECK(k != nullptr && v != nullptr);
  const kernels::TypeTraits* k_traits = kernels::GetTypeTraits(layout.k_type);
  KVMESH_CHECK(k_traits != nullptr);
  const kernels::TypeTraits* q_traits = kernels::GetTypeTraits(k_traits->vec_dot_type);
  KVMESH_CHECK(q_traits != nullptr);
  return AttentionKernels{q_traits, *k, *v, layout.v_type == TensorType::kF16};
}

void PagedAttention(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                    int kv_head, std::span<const int32_t> block_table, int n_ctx, const float* q,
                    float scale, AttentionScratch* scratch, float* out) {
  const KvLayout& layout = pages.layout();
  const int head_dim = layout.head_dim;
  const int bs = layout.block_size;

  scratch->query.resize(kernels::RowSizeBytes(*kernels.query_traits, head_dim));
  kernels.query_traits->from_float(q, scratch->query.data(), head_dim);

  scratch->scores.resize(n_ctx);
  float* scores = scratch->scores.data();
  float max_score = -INFINITY;
  for (int j = 0; j < n_ctx; ++j) {
    const uint8_t* k = pages.KRow(layer, block_table[j / bs], j % bs, kv_head);
    scores[j] = kernels.k.dot(head_dim, k, scratch->query.data()) * scale;
    max_score = std::max(max_score, scores[j]);
  }
  double sum = 0.0;
  for (int j = 0; j < n_ctx; ++j) {
    scores[j] = std::exp(scores[j] - max_score);
    sum += scores[j];
  }
  const float inv_sum = static_cast<float>(1.0 / sum);
  for (int j = 0; j < n_ctx; ++j) {
    float w = scores[j] * inv_sum;
    if (kernels.round_weights_to_f16) w = HalfToFloat(FloatToHalf(w));
    scores[j] = w;
  }

  std::fill(out, out + head_dim, 0.0f);
  for (int j = 0; j < n_ctx; ++j) {
    const uint8_t* v = pages.VRow(layer, block_table[j / bs], j % bs, kv_head);
    kernels.v.accumulate(head_dim, v, scores[j], out);
  }
}

}  // namespace kvmesh
