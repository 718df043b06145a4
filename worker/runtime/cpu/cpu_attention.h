// Causal attention of one query head over a sequence's paged K/V (CPU).
//
// K and V rows are read where they lie, through the sequence's block table, in
// their storage type: each score is the K type's vec_dot of the K row with the
// query converted to that type's vec_dot_type, so no page is ever dequantized
// as a whole. With an f16 cache this rounds the query and the softmax weights
// to f16 the way the reference (non-flash) attention of the GGUF ecosystem
// does.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "worker/runtime/cpu/cpu_kv_pages.h"

namespace kvmesh {

struct AttentionScratch {
  std::vector<float> scores;
  std::vector<uint8_t> query;  // converted query
  std::vector<float> v_row;    // a dequantized V row
};

// out[head_dim] = softmax(scale · q·Kᵀ[0..n_ctx)) · V[0..n_ctx) for KV head
// `kv_head` of layer `layer`, positions 0..n_ctx-1 located by `block_table`.
void PagedAttention(const CpuKvPages& pages, int layer, int kv_head,
                    std::span<const int32_t> block_table, int n_ctx, const float* q, float scale,
                    AttentionScratch* scratch, float* out);

}  // namespace kvmesh
