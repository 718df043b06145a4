// Causal attention of one query head over a sequence's paged K/V (CPU).
//
// K and V rows are read where they lie, through the sequence's block table, in
// their storage type: each score is the K type's dot product of the K row with
// the query converted once to that type's vec_dot_type, and each V row is
// accumulated straight from its stored form, so no page is ever dequantized as
// a whole. With an f16 V cache the softmax weights are rounded to f16 the way
// the reference (non-flash) attention of the GGUF ecosystem does.
//
// The row kernels come from AttentionKernels: the scalar reference, or an
// AVX2/AVX-512 variant of the same arithmetic (kv_row_kernels.h). K
// transforms (centering, rotation) happen before this: the caller passes the
// query already rotated when the layout says so.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "worker/kernels/cpu/kv_row_kernels.h"
#include "worker/kernels/cpu/type_traits.h"
#include "worker/model/model_config.h"
#include "worker/runtime/cpu/cpu_kv_pages.h"

namespace kvmesh {

// The kernels attention needs for one layout, chosen once.
struct AttentionKernels {
  // CHECKs that the layout's types are KV storage types.
  static AttentionKernels For(const KvLayout& layout, kernels::Isa isa);

  const kernels::TypeTraits* query_traits;  // the K type's vec_dot_type
  KvRowKernels k;
  KvRowKernels v;
  // The same walks a block of positions at a time, where the ISA has them
  // for the type (the same floats); nullptr otherwise.
  const KvBlockKernels* k_blocks;
  const KvBlockKernels* v_blocks;
  // With an f16 V cache, rounds the softmax weights to f16 (RowOps'
  // round_to_half of the V kernels' ISA); nullptr otherwise.
  void (*round_weights)(float* w, int64_t n);
  // Softmax's exps and their sum (RowOps' exp_shifted of the K kernels' ISA).
  double (*exp_shifted)(float* x, int64_t n, float shift);
  // Softmax's normalisation (RowOps' scale of the K kernels' ISA).
  void (*scale)(float* x, int64_t n, float factor);
};

// Long contexts are attended in partitions of this many positions: partition
// p holds positions [p · kAttentionPartition, (p + 1) · kAttentionPartition).
// Each partition gets its own softmax and weighted sum of V rows, and the
// results combine by their sums of exps (the flash-decoding split), so one
// long sequence's attention can spread over threads. The cut depends on
// positions only, never on threads or on the batch: a token gets the same
// bits however its work is scheduled. Contexts up to one partition are
// attended in one piece, as before partitions existed.
inline constexpr int kAttentionPartition = 2048;

// The partitions of a context of n_ctx positions (at least 1).
int AttentionPartitions(int n_ctx);

// How a query's scores are formed and which positions it attends: score =
// scale · q·k, then cap · tanh(score · (1 / cap)) where softcap > 0; a query
// at position p attends [p - window + 1, p] where window > 0, else [0, p].
// A plain scale converts implicitly (the llama families' attention).
struct ScoreRule {
  ScoreRule(float s) : scale(s) {}  // NOLINT(google-explicit-constructor)
  ScoreRule(float s, float cap, int w) : scale(s), softcap(cap), window(w) {}
  float scale = 1.0f;
  float softcap = 0.0f;
  int window = 0;
};

// One query head's softmax over one partition: the largest score and the sum
// of exp(score - max) over its positions; {-inf, 0} when the head attends
// none of them.
struct PartialSoftmax {
  float max;
  double sum;
};

struct AttentionScratch {
  std::vector<float> partials;  // per-partition outputs of a long context
  std::vector<PartialSoftmax> partial_softmax;
  std::vector<float> scores;
  std::vector<float> outputs;        // a tile's outputs before they are scattered
  std::vector<uint8_t> query;        // converted query
  std::vector<const uint8_t*> rows;  // K or V row of each position
};

// out[head_dim] = softmax(scale · q·Kᵀ[0..n_ctx)) · V[0..n_ctx) for KV head
// `kv_head` of layer `layer`, positions 0..n_ctx-1 located by `block_table`.
void PagedAttention(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                    int kv_head, std::span<const int32_t> block_table, int n_ctx, const float* q,
                    const ScoreRule& rule, AttentionScratch* scratch, float* out);

// PagedAttention for the n_q query heads that share KV head `kv_head`: q and
// out hold n_q (at most kMaxQueryHeadsPerKvHead) consecutive head vectors. Each head's result is
// bit for bit what PagedAttention gives it alone; K and V rows are walked once for all.
void PagedAttentionGroup(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                         int kv_head, std::span<const int32_t> block_table, int n_ctx,
                         const float* q, int n_q, const ScoreRule& rule, AttentionScratch* scratch,
                         float* out);

// The query heads of `n_tokens` consecutive positions of one sequence,
// together: token i's n_q heads (at q + i * q_stride, consecutive) attend to
// the first n_ctx + i positions, and their outputs go to out + i *
// out_stride. Each head's result is bit for bit what PagedAttentionGroup
// gives it: scores and max over its own positions, the V sum's fma chain
// continued past the shared positions with the row kernel. With block
// kernels the K rows, and the V rows all share, are walked once for the tile
// rather than once per token.
// n_tokens * n_q must not exceed kMaxQueryHeadsPerKvHead.
void PagedAttentionTile(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                        int kv_head, std::span<const int32_t> block_table, int n_ctx, int n_tokens,
                        const float* q, int64_t q_stride, int n_q, const ScoreRule& rule,
                        AttentionScratch* scratch, float* out, int64_t out_stride);

// PagedAttentionTile over the positions of partition `partition` only: token
// i attends those of its first n_ctx + i positions that lie in it, with a
// softmax normalised over them, and parts[i * n_q + g] gets that softmax's
// max and sum for head g. A token that attends none of them gets zeros and
// {-inf, 0}. PagedAttentionTile of a long context is these partitions
// combined by CombinePartitions, so a caller may compute the partitions in
// any order, on any threads, and get the same bits.
void PagedAttentionTilePart(const CpuKvPages& pages, const AttentionKernels& kernels, int layer,
                            int kv_head, std::span<const int32_t> block_table, int partition,
                            int n_ctx, int n_tokens, const float* q, int64_t q_stride, int n_q,
                            const ScoreRule& rule, AttentionScratch* scratch, float* out,
                            int64_t out_stride, PartialSoftmax* parts);

// out[head_dim] = one head's attention from its n_parts partitions:
// partition p's output at part_outputs + p * part_stride and its softmax at
// parts[p * parts_stride], each weighted by its share of the total sum of
// exps (in double, rounded once to float; 0 for a partition whose max is
// under the largest by more than kExpShiftedFloor, as in one pass),
// accumulated from partition 0 up with fma. A single partition comes back
// unchanged.
void CombinePartitions(const float* part_outputs, int64_t part_stride, const PartialSoftmax* parts,
                       int64_t parts_stride, int n_parts, int head_dim, float* out);

}  // namespace kvmesh
