#include "worker/runtime/cpu/cpu_executor.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "worker/kernels/cpu/ops.h"
#include "worker/kv/kv_transform.h"
#include "worker/runtime/cpu/kv_quantizer.h"

namespace kvmesh {
namespace {

// The matrix kernels' tier: the process's (kernels::ActiveIsa), capped by the
// executor's `isa` like the attention kernels.
kernels::Isa MatMulIsa(kernels::Isa isa) { return std::min(kernels::ActiveIsa(), isa); }

}  // namespace

StatusOr<std::unique_ptr<CpuExecutor>> CpuExecutor::Create(const Model& model,
                                                           const KvLayout& layout,
                                                           int64_t num_blocks, int num_threads,
                                                           kernels::Isa isa) {
  const ModelConfig& c = model.config();
  RETURN_IF_ERROR(layout.Validate());
  if (layout.n_layer != c.n_layer || layout.n_head_kv != c.n_head_kv ||
      layout.head_dim != c.head_dim) {
    return InvalidArgumentError("KV layout (" + layout.ToString() + ") does not match the model (" +
                                std::to_string(c.n_layer) + " layers, " +
                                std::to_string(c.n_head_kv) + " KV heads, head size " +
                                std::to_string(c.head_dim) + ")");
  }
  if (num_blocks <= 0 || num_blocks > (1ll << 31) - 1) {
    return InvalidArgumentError("number of KV blocks " + std::to_string(num_blocks) +
                                " is outside 1..2^31-1");
  }
  if (num_threads < 1 || num_threads > 1024) {
    return InvalidArgumentError("thread count " + std::to_string(num_threads) +
                                " is outside 1..1024");
  }
  return std::unique_ptr<CpuExecutor>(new CpuExecutor(model, layout, num_blocks, num_threads, isa));
}

CpuExecutor::CpuExecutor(const Model& model, const KvLayout& layout, int64_t num_blocks,
                         int num_threads, kernels::Isa isa)
    : model_(model),
      config_(model.config()),
      pool_(num_threads),
      pages_(layout, num_blocks),
      attention_kernels_(AttentionKernels::For(layout, isa)),
      packed_(PackedWeights::Pack(model.weights(), MatMulIsa(isa), pool_)),
      row_ops_(kernels::GetRowOps(MatMulIsa(isa))),
      rope_(model.config().rope, model.weights().rope_freq_factors) {}

Status CpuExecutor::Validate(const ForwardBatch& batch) const {
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int32_t t = batch.tokens[i];
    if (t < 0 || t >= config_.n_vocab) {
      return InvalidArgumentError("token id " + std::to_string(t) + " at batch index " +
                                  std::to_string(i) + " is outside the vocabulary (0.." +
                                  std::to_string(config_.n_vocab - 1) + ")");
    }
  }
  const int bs = pages_.layout().block_size;
  int64_t covered = 0;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceChunk& seq = batch.sequences[s];
    const std::string where = "sequence " + std::to_string(s) + ": ";
    if (seq.num_tokens <= 0 || seq.first_token != covered ||
        seq.first_token + seq.num_tokens > n_tokens) {
      return InvalidArgumentError(where + "token range [" + std::to_string(seq.first_token) +
                                  ", +" + std::to_string(seq.num_tokens) +
                                  ") does not continue the batch's tokens in order");
    }
    covered += seq.num_tokens;
    if (seq.start_pos < 0) return InvalidArgumentError(where + "negative start position");
    const int64_t end_pos = static_cast<int64_t>(seq.start_pos) + seq.num_tokens;
    const int64_t blocks_needed = (end_pos + bs - 1) / bs;
    if (static_cast<int64_t>(seq.block_table.size()) < blocks_needed) {
      return InvalidArgumentError(where + "block table has " +
                                  std::to_string(seq.block_table.size()) +
                                  " blocks, positions up to " + std::to_string(end_pos) + " need " +
                                  std::to_string(blocks_needed));
    }
    for (int64_t b = 0; b < blocks_needed; ++b) {
      if (seq.block_table[b] < 0 || seq.block_table[b] >= pages_.num_blocks()) {
        return InvalidArgumentError(where + "block id " + std::to_string(seq.block_table[b]) +
                                    " is outside the pool of " +
                                    std::to_string(pages_.num_blocks()) + " blocks");
      }
    }
  }
  if (covered != n_tokens) {
    return InvalidArgumentError("the sequences cover " + std::to_string(covered) +
                                " of the batch's " + std::to_string(n_tokens) + " tokens");
  }
  return Status::Ok();
}

void CpuExecutor::Embed(const std::vector<int32_t>& tokens) {
  const WeightMatrix& emb = model_.weights().token_embd;
  const int64_t n_embd = config_.n_embd;
  pool_.ParallelFor(static_cast<int64_t>(tokens.size()), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      emb.traits->to_float(emb.Row(tokens[i]), x_.data() + i * n_embd, n_embd);
    }
  });
}

void CpuExecutor::AttentionLayer(int layer, const ForwardBatch& batch) {
  const LayerWeights& w = model_.weights().layers[layer];
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  const int64_t n_embd = config_.n_embd;
  const int head_dim = config_.head_dim;
  const int n_head = config_.n_head;
  const int n_head_kv = config_.n_head_kv;
  const int64_t q_dim = config_.n_embd_q();
  const int64_t kv_dim = config_.n_embd_k();

  pool_.ParallelFor(n_tokens, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      row_ops_.rms_norm(x_.data() + t * n_embd, w.attn_norm.data(), h_.data() + t * n_embd, n_embd,
                        config_.rms_eps);
    }
  });
  // Q, K and V share one conversion of h when their weight types agree, and
  // one parallel region.
  const PackedLayer& pw = packed_.layers[layer];
  const MatMulTarget qkv[] = {{&pw.wq, q_.data()}, {&pw.wk, k_.data()}, {&pw.wv, v_.data()}};
  MatMulShared(h_.data(), n_tokens, qkv, pool_, &xq_);

  // Biases, per-head norms and RoPE; then store K and V into the pages.
  const KvLayout& layout = pages_.layout();
  const KvEncodeFn k_store = GetKvEncoder(layout.k_type, layout.rounding);
  const KvEncodeFn v_store = GetKvEncoder(layout.v_type, layout.rounding);
  pool_.ParallelFor(n_tokens, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      float* q = q_.data() + t * q_dim;
      float* k = k_.data() + t * kv_dim;
      float* v = v_.data() + t * kv_dim;
      if (!w.bq.empty()) {
        for (int64_t i = 0; i < q_dim; ++i) q[i] += w.bq[i];
        for (int64_t i = 0; i < kv_dim; ++i) k[i] += w.bk[i];
        for (int64_t i = 0; i < kv_dim; ++i) v[i] += w.bv[i];
      }
      for (int h = 0; h < n_head; ++h) {
        float* qh = q + h * head_dim;
        if (!w.q_norm.empty()) kernels::RmsNorm(qh, w.q_norm.data(), qh, head_dim, config_.rms_eps);
        rope_.Apply(t, qh);
        TransformQuery(layout, qh);
      }
      for (int h = 0; h < n_head_kv; ++h) {
        TransformValue(layout, v + h * head_dim);
        float* kh = k + h * head_dim;
        if (!w.k_norm.empty()) kernels::RmsNorm(kh, w.k_norm.data(), kh, head_dim, config_.rms_eps);
        rope_.Apply(t, kh);
        TransformKey(layout, layer, h, kh);
      }
      const SequenceChunk& seq = batch.sequences[token_seq_[t]];
      const int32_t pos = positions_[t];
      const int32_t block = seq.block_table[pos / layout.block_size];
      const int slot = pos % layout.block_size;
      for (int h = 0; h < n_head_kv; ++h) {
        k_store(k + h * head_dim, pages_.KRow(layer, block, slot, h), head_dim);
        v_store(v + h * head_dim, pages_.VRow(layer, block, slot, h), head_dim);
      }
    }
  });

  // Causal attention: token t attends to positions 0..positions_[t] of its
  // own sequence. Work items are (token, KV head) pairs; an item computes the
  // `group` query heads that share the KV head, reading its rows once.
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_dim));
  const int group = n_head / n_head_kv;
  // Items are numbered head-major: a causal prompt's later tokens cost more,
  // and token-major chunks would give one thread most of that work.
  const int64_t items = n_tokens * n_head_kv;
  pool_.ParallelFor(items, [&](int64_t b, int64_t e) {
    thread_local AttentionScratch scratch;
    for (int64_t it = b; it < e; ++it) {
      const int kv_head = static_cast<int>(it / n_tokens);
      const int64_t t = it % n_tokens;
      const SequenceChunk& seq = batch.sequences[token_seq_[t]];
      const int64_t first = t * q_dim + static_cast<int64_t>(kv_head) * group * head_dim;
      float* out = attn_.data() + first;
      PagedAttentionGroup(pages_, attention_kernels_, layer, kv_head, seq.block_table,
                          positions_[t] + 1, q_.data() + first, group, scale, &scratch, out);
      for (int g = 0; g < group; ++g) RestoreAttentionOutput(layout, out + g * head_dim);
    }
  });

  MatMul(pw.wo, attn_.data(), n_tokens, proj_.data(), pool_, &xq_);
  for (int64_t i = 0; i < n_tokens * n_embd; ++i) x_[i] += proj_[i];
}

void CpuExecutor::FeedForwardLayer(int layer, int64_t n_tokens) {
  const LayerWeights& w = model_.weights().layers[layer];
  const int64_t n_embd = config_.n_embd;
  const int64_t n_ff = config_.n_ff;
  pool_.ParallelFor(n_tokens, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      row_ops_.rms_norm(x_.data() + t * n_embd, w.ffn_norm.data(), h_.data() + t * n_embd, n_embd,
                        config_.rms_eps);
    }
  });
  const PackedLayer& pw = packed_.layers[layer];
  const MatMulTarget gate_up[] = {{&pw.w_gate, gate_.data()}, {&pw.w_up, up_.data()}};
  MatMulShared(h_.data(), n_tokens, gate_up, pool_, &xq_);
  pool_.ParallelFor(n_tokens, [&](int64_t b, int64_t e) {
    for (int64_t t = b; t < e; ++t) {
      row_ops_.swiglu(gate_.data() + t * n_ff, up_.data() + t * n_ff, gate_.data() + t * n_ff,
                      n_ff);
    }
  });
  MatMul(pw.w_down, gate_.data(), n_tokens, proj_.data(), pool_, &xq_);
  for (int64_t i = 0; i < n_tokens * n_embd; ++i) x_[i] += proj_[i];
}

void CpuExecutor::ComputeLogits(const ForwardBatch& batch, ForwardOutput* output) {
  const int64_t n_embd = config_.n_embd;
  // Gather the rows that need logits, normalised.
  std::vector<int64_t> rows;
  output->first_row.assign(batch.sequences.size(), -1);
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceChunk& seq = batch.sequences[s];
    if (seq.logits == LogitsMode::kNone) continue;
    output->first_row[s] = static_cast<int64_t>(rows.size());
    const int64_t first =
        seq.logits == LogitsMode::kAll ? seq.first_token : seq.first_token + seq.num_tokens - 1;
    for (int64_t t = first; t < seq.first_token + seq.num_tokens; ++t) rows.push_back(t);
  }
  output->n_vocab = config_.n_vocab;
  output->logits.resize(rows.size() * config_.n_vocab);
  if (rows.empty()) return;
  const std::vector<float>& norm = model_.weights().output_norm;
  pool_.ParallelFor(static_cast<int64_t>(rows.size()), [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      row_ops_.rms_norm(x_.data() + rows[i] * n_embd, norm.data(), h_.data() + i * n_embd, n_embd,
                        config_.rms_eps);
    }
  });
  MatMul(packed_.output, h_.data(), static_cast<int64_t>(rows.size()), output->logits.data(), pool_,
         &xq_);
}

Status CpuExecutor::Forward(const ForwardBatch& batch, ForwardOutput* output) {
  RETURN_IF_ERROR(Validate(batch));
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  output->logits.clear();
  output->first_row.assign(batch.sequences.size(), -1);
  output->n_vocab = config_.n_vocab;
  if (n_tokens == 0) return Status::Ok();

  positions_.resize(n_tokens);
  token_seq_.resize(n_tokens);
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceChunk& seq = batch.sequences[s];
    for (int32_t i = 0; i < seq.num_tokens; ++i) {
      positions_[seq.first_token + i] = seq.start_pos + i;
      token_seq_[seq.first_token + i] = static_cast<int32_t>(s);
    }
  }
  rope_.Compute(positions_);

  const int64_t n_embd = config_.n_embd;
  x_.resize(n_tokens * n_embd);
  h_.resize(n_tokens * n_embd);
  proj_.resize(n_tokens * n_embd);
  q_.resize(n_tokens * config_.n_embd_q());
  attn_.resize(n_tokens * config_.n_embd_q());
  k_.resize(n_tokens * config_.n_embd_k());
  v_.resize(n_tokens * config_.n_embd_v());
  gate_.resize(n_tokens * config_.n_ff);
  up_.resize(n_tokens * config_.n_ff);

  Embed(batch.tokens);
  for (int l = 0; l < config_.n_layer; ++l) {
    AttentionLayer(l, batch);
    FeedForwardLayer(l, n_tokens);
  }
  ComputeLogits(batch, output);
  return Status::Ok();
}

Status CpuExecutor::ReadBlock(int32_t block, std::vector<uint8_t>* out) const {
  if (block < 0 || block >= pages_.num_blocks()) {
    return InvalidArgumentError("block id " + std::to_string(block) + " is outside the pool");
  }
  pages_.ReadBlock(block, out);
  return Status::Ok();
}

Status CpuExecutor::WriteBlock(int32_t block, std::span<const uint8_t> bytes) {
  if (block < 0 || block >= pages_.num_blocks()) {
    return InvalidArgumentError("block id " + std::to_string(block) + " is outside the pool");
  }
  if (bytes.size() != pages_.layout().bytes_per_block()) {
    return InvalidArgumentError("block data has " + std::to_string(bytes.size()) +
                                " bytes, expected " +
                                std::to_string(pages_.layout().bytes_per_block()));
  }
  pages_.WriteBlock(block, bytes.data());
  return Status::Ok();
}

}  // namespace kvmesh
