#include "worker/runtime/cpu/cpu_executor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "common/check.h"
#include "common/half.h"
#include "worker/kv/kv_transform.h"
#include "worker/model/moe_routing.h"
#include "worker/runtime/cpu/kv_quantizer.h"
#include "worker/runtime/layer_fields.h"

namespace kvmesh {
namespace {

// The matrix kernels' tier: the process's (kernels::ActiveIsa), capped by the
// executor's `isa` like the attention kernels.
kernels::Isa MatMulIsa(kernels::Isa isa) { return std::min(kernels::ActiveIsa(), isa); }

}  // namespace

StatusOr<std::unique_ptr<CpuExecutor>> CpuExecutor::Create(const Model& model,
                                                           const KvLayout& layout,
                                                           const DeviceShard& shard,
                                                           int64_t num_blocks, Communicator* comm,
                                                           kernels::Isa isa) {
  if (shard.device.kind != DeviceKind::kCpu) {
    return InvalidArgumentError("device " + shard.device.Name() + " is not a CPU device");
  }
  if (shard.threads < 1 || shard.threads > 1024) {
    return InvalidArgumentError("device " + shard.device.Name() + ": thread count " +
                                std::to_string(shard.threads) + " is outside 1..1024");
  }
  WeightShard weights = WeightShard::Make(model.weights(), model.config(), shard);
  return std::unique_ptr<CpuExecutor>(
      new CpuExecutor(model, layout, shard, std::move(weights), num_blocks, comm, isa));
}

CpuExecutor::CpuExecutor(const Model& model, const KvLayout& layout, const DeviceShard& shard,
                         WeightShard weights, int64_t num_blocks, Communicator* comm,
                         kernels::Isa isa)
    : config_(model.config()),
      shard_(shard),
      layout_(layout),
      pool_(shard.threads, shard.device.cores),
      pages_(shard.ShardLayout(layout), num_blocks, shard.WindowedLayers(model.config())),
      attention_kernels_(AttentionKernels::For(layout, isa)),
      weights_(std::move(weights)),
      packed_(PackedWeights::Pack(weights_.weights, MatMulIsa(isa), pool_)),
      row_ops_(kernels::GetRowOps(MatMulIsa(isa))),
      rope_(model.config().rope, model.weights().rope_freq_factors),
      comm_(comm) {
  if (config_.window_rope) {
    window_rope_.emplace(*config_.window_rope, model.weights().rope_freq_factors);
  }
  // The packed copy is what the kernels read: the column slices' copies go.
  for (LayerWeights& l : weights_.weights.layers) {
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down,
                            &l.w_gate_inp, &l.gate_shexp, &l.up_shexp, &l.down_shexp}) {
      m->data = nullptr;
    }
    for (auto* experts : {&l.gate_exps, &l.up_exps, &l.down_exps}) {
      for (WeightMatrix& m : *experts) m.data = nullptr;
    }
  }
  weights_.storage.clear();
  const int64_t hd = config_.head_dim;
  Buf(Act::kResidual).width = config_.n_embd;
  Buf(Act::kNormed).width = config_.n_embd;
  Buf(Act::kProjection).width = config_.n_embd;
  Buf(Act::kQuery).width = shard_.num_q_heads() * hd;
  Buf(Act::kAttention).width = shard_.num_q_heads() * hd;
  Buf(Act::kKey).width = shard_.num_kv_heads() * hd;
  Buf(Act::kValue).width = shard_.num_kv_heads() * config_.head_dim_v;
  Buf(Act::kGate).width = shard_.num_ff();
  Buf(Act::kUp).width = shard_.num_ff();
  Buf(Act::kFinal).width = config_.n_embd;
  Buf(Act::kLogits).width = shard_.vocab_end - shard_.vocab_begin;
}

int64_t CpuExecutor::Rows(Act a) const {
  return a == Act::kFinal || a == Act::kLogits ? static_cast<int64_t>(step_.logit_rows.size())
                                               : n_tokens_;
}

const std::vector<float>& CpuExecutor::VectorOf(int layer, Vector v) const {
  if (v == Vector::kOutputNorm) return weights_.weights.output_norm;
  return LayerVector(weights_.weights.layers[layer - shard_.layer_begin], v);
}

const PackedMatrix& CpuExecutor::MatrixOf(int layer, Matrix m) const {
  if (m == Matrix::kOutput) return packed_.output;
  return LayerMatrix(packed_.layers[layer - shard_.layer_begin], m);
}

void CpuExecutor::BeginStep(const StepView& step) {
  step_ = step;
  n_tokens_ = static_cast<int64_t>(step.positions.size());
  rope_.Compute(step.positions);
  if (window_rope_) window_rope_->Compute(step.positions);
  for (int a = 0; a <= static_cast<int>(Act::kLogits); ++a) {
    Buffer& b = buffers_[a];
    b.data.resize(Rows(static_cast<Act>(a)) * b.width);
  }
}

void CpuExecutor::Embed() {
  const WeightMatrix& emb = weights_.weights.token_embd;
  const int64_t n_embd = config_.n_embd;
  const std::vector<int32_t>& tokens = step_.batch->tokens;
  float* x = Buf(Act::kResidual).data.data();
  ForEachRow(n_tokens_,
             [&](int64_t i) { emb.traits->to_float(emb.Row(tokens[i]), x + i * n_embd, n_embd); });
}

void CpuExecutor::SelectLogitRows() {
  const int64_t n_embd = config_.n_embd;
  const float* x = Buf(Act::kResidual).data.data();
  float* out = Buf(Act::kFinal).data.data();
  for (size_t i = 0; i < step_.logit_rows.size(); ++i) {
    std::memcpy(out + i * n_embd, x + step_.logit_rows[i] * n_embd, n_embd * sizeof(float));
  }
}

void CpuExecutor::RmsNorm(Act in, Act out, int layer, Vector weight) {
  const int64_t n_embd = config_.n_embd;
  const float* x = Buf(in).data.data();
  float* y = Buf(out).data.data();
  const float* w = VectorOf(layer, weight).data();
  ForEachRow(Rows(in), [&](int64_t t) {
    row_ops_.rms_norm(x + t * n_embd, w, y + t * n_embd, n_embd, config_.rms_eps);
  });
}

void CpuExecutor::HeadRmsNorm(Act a, int layer, Vector weight) {
  Buffer& buf = Buf(a);
  const int head_dim = config_.head_dim;
  const int64_t heads = buf.width / head_dim;
  const float* w = VectorOf(layer, weight).data();
  ForEachRow(n_tokens_, [&](int64_t t) {
    for (int64_t h = 0; h < heads; ++h) {
      float* x = buf.data.data() + t * buf.width + h * head_dim;
      kernels::RmsNorm(x, w, x, head_dim, config_.rms_eps);
    }
  });
}

void CpuExecutor::AddBias(Act a, int layer, Vector bias) {
  Buffer& buf = Buf(a);
  const float* w = VectorOf(layer, bias).data();
  ForEachRow(n_tokens_, [&](int64_t t) {
    float* x = buf.data.data() + t * buf.width;
    for (int64_t i = 0; i < buf.width; ++i) x[i] += w[i];
  });
}

void CpuExecutor::MatMul(Act in, int layer, std::span<const MatMulOut> outs) {
  KVMESH_CHECK(outs.size() <= 4);
  MatMulTarget targets[4];
  bool scatter_logits = false;
  for (size_t i = 0; i < outs.size(); ++i) {
    targets[i] = {&MatrixOf(layer, outs[i].matrix), Buf(outs[i].out).data.data()};
    if (outs[i].out == Act::kLogits) {
      // The whole vocabulary lands in the host rows as it is computed.
      if (shard_.vocab_begin == 0 && shard_.vocab_end == step_.n_vocab) {
        targets[i].y = step_.logits;
      } else {
        scatter_logits = true;
      }
    }
  }
  const int64_t rows = Rows(in);
  if (rows == 0) return;
  MatMulShared(Buf(in).data.data(), rows, std::span<const MatMulTarget>(targets, outs.size()),
               pool_, &xq_);
  if (scatter_logits) {
    const Buffer& logits = Buf(Act::kLogits);
    for (int64_t r = 0; r < rows; ++r) {
      std::memcpy(step_.logits + r * step_.n_vocab + shard_.vocab_begin,
                  logits.data.data() + r * logits.width, logits.width * sizeof(float));
    }
  }
}

void CpuExecutor::Rope(Act a, int layer) {
  const RopeTable& rope = config_.UsesWindowRope(layer) ? *window_rope_ : rope_;
  Buffer& buf = Buf(a);
  const int head_dim = config_.head_dim;
  const int64_t heads = buf.width / head_dim;
  ForEachRow(n_tokens_, [&](int64_t t) {
    for (int64_t h = 0; h < heads; ++h)
      rope.Apply(t, buf.data.data() + t * buf.width + h * head_dim);
  });
}

void CpuExecutor::Attention(int layer) {
  const int local_layer = layer - shard_.layer_begin;
  const int head_dim = config_.head_dim;
  const int n_head = shard_.num_q_heads();
  const int n_head_kv = shard_.num_kv_heads();
  const int64_t q_dim = Buf(Act::kQuery).width;
  const int64_t kv_dim = Buf(Act::kKey).width;
  float* q_all = Buf(Act::kQuery).data.data();
  float* k_all = Buf(Act::kKey).data.data();
  float* v_all = Buf(Act::kValue).data.data();
  const std::vector<SequenceChunk>& sequences = step_.batch->sequences;

  // The layout's transforms, then K and V into the pages.
  const KvEncodeFn k_store = GetKvEncoder(layout_.k_type, layout_.rounding);
  const KvEncodeFn v_store = GetKvEncoder(layout_.v_type, layout_.rounding);
  const int bs = layout_.block_size;
  const bool windowed = pages_.windowed(local_layer);
  ForEachRow(n_tokens_, [&](int64_t t) {
    float* q = q_all + t * q_dim;
    float* k = k_all + t * kv_dim;
    float* v = v_all + t * kv_dim;
    for (int h = 0; h < n_head; ++h) TransformQuery(layout_, q + h * head_dim);
    for (int h = 0; h < n_head_kv; ++h) {
      TransformValue(layout_, v + h * head_dim);
      TransformKey(layout_, layer, shard_.kv_head_begin + h, k + h * head_dim);
    }
    const SequenceChunk& seq = sequences[step_.token_seq[t]];
    const int32_t pos = step_.positions[t];
    const int32_t block = (windowed ? seq.window_table : seq.block_table)[pos / bs];
    const int slot = pos % bs;
    for (int h = 0; h < n_head_kv; ++h) {
      k_store(k + h * head_dim, pages_.KRow(local_layer, block, slot, h), head_dim);
      v_store(v + h * head_dim, pages_.VRow(local_layer, block, slot, h), head_dim);
    }
  });

  // Causal attention: token t attends to positions 0..positions[t] of its
  // own sequence. Work items are (token, KV head) pairs; an item computes the
  // `group` query heads that share the KV head, reading its rows once.
  // Scores scaled by 1/sqrt(head_dim) unless the graph scaled the queries;
  // the model's cap and this layer's window.
  const ScoreRule rule(
      config_.query_scale > 0.0f ? 1.0f : 1.0f / std::sqrt(static_cast<float>(head_dim)),
      config_.attn_softcap, config_.LayerWindow(layer));
  const int group = n_head / n_head_kv;
  float* attn = Buf(Act::kAttention).data.data();
  auto table_of = [windowed](const SequenceChunk& seq) {
    return windowed ? seq.window_table : seq.block_table;
  };
  // Tiles of consecutive positions of one sequence (a prefill chunk), so
  // that K and V rows are walked once for up to kTileHeads query heads; each
  // head's result is the same as alone (PagedAttentionTile).
  constexpr int kTileHeads = 8;
  const int tile_tokens = std::max(1, kTileHeads / group);
  tiles_.clear();
  for (int64_t t = 0; t < n_tokens_;) {
    int64_t end = t + 1;
    while (end < n_tokens_ && end - t < tile_tokens && step_.token_seq[end] == step_.token_seq[t] &&
           step_.positions[end] == step_.positions[end - 1] + 1) {
      ++end;
    }
    tiles_.push_back({t, static_cast<int32_t>(end - t)});
    t = end;
  }
  const int64_t n_tiles = static_cast<int64_t>(tiles_.size());
  auto context_of = [&](const Tile& tile) { return step_.positions[tile.first_token] + 1; };
  auto finish = [&](const Tile& tile, int kv_head) {
    const int64_t first =
        tile.first_token * q_dim + static_cast<int64_t>(kv_head) * group * head_dim;
    for (int i = 0; i < tile.num_tokens; ++i) {
      float* out = attn + first + i * q_dim;
      for (int g = 0; g < group; ++g) RestoreAttentionOutput(layout_, out + g * head_dim);
    }
  };
  // Items are numbered head-major: a causal prompt's later tokens cost more,
  // and token-major chunks would give one thread most of that work.
  const int64_t items = n_tiles * n_head_kv;
  // Too few items to keep every thread busy, and a long context: each
  // partition of positions becomes an item of its own (the same bits as one
  // item doing them all, PagedAttentionTilePart), then the partitions of
  // every head are combined.
  int64_t n_parts = 0;
  if (items < 4 * static_cast<int64_t>(pool_.num_threads())) {
    part_first_.resize(n_tiles + 1);
    for (int64_t i = 0; i < n_tiles; ++i) {
      part_first_[i] = n_parts;
      n_parts += AttentionPartitions(context_of(tiles_[i]) + tiles_[i].num_tokens - 1);
    }
    part_first_[n_tiles] = n_parts;
    if (n_parts == n_tiles) n_parts = 0;  // every context fits one partition
  }
  if (n_parts == 0) {
    pool_.ParallelFor(items, [&](int64_t b, int64_t e) {
      thread_local AttentionScratch scratch;
      for (int64_t it = b; it < e; ++it) {
        const int kv_head = static_cast<int>(it / n_tiles);
        const Tile& tile = tiles_[it % n_tiles];
        const int64_t t = tile.first_token;
        const SequenceChunk& seq = sequences[step_.token_seq[t]];
        const int64_t first = t * q_dim + static_cast<int64_t>(kv_head) * group * head_dim;
        PagedAttentionTile(pages_, attention_kernels_, local_layer, kv_head, table_of(seq),
                           context_of(tile), tile.num_tokens, q_all + first, q_dim, group, rule,
                           &scratch, attn + first, q_dim);
        finish(tile, kv_head);
      }
    });
    return;
  }
  // Partition slot s of tile i is part_first_[i] + p; its outputs are laid
  // out [slot][token of the tile][q_dim], its softmax [slot][KV head][token
  // of the tile][query head of the group] (tile_tokens tokens at most), as
  // PagedAttentionTilePart writes them for one KV head.
  const int64_t slot_floats = static_cast<int64_t>(tile_tokens) * q_dim;
  const int64_t slot_heads = static_cast<int64_t>(tile_tokens) * n_head;
  part_outputs_.resize(static_cast<size_t>(n_parts * slot_floats));
  part_softmax_.resize(static_cast<size_t>(n_parts * slot_heads));
  pool_.ParallelFor(n_parts * n_head_kv, [&](int64_t b, int64_t e) {
    thread_local AttentionScratch scratch;
    for (int64_t it = b; it < e; ++it) {
      const int kv_head = static_cast<int>(it / n_parts);
      const int64_t slot = it % n_parts;
      const int64_t i =
          std::upper_bound(part_first_.begin(), part_first_.end(), slot) - part_first_.begin() - 1;
      const Tile& tile = tiles_[i];
      const int64_t t = tile.first_token;
      const SequenceChunk& seq = sequences[step_.token_seq[t]];
      const int64_t head0 = static_cast<int64_t>(kv_head) * group;
      PagedAttentionTilePart(pages_, attention_kernels_, local_layer, kv_head, table_of(seq),
                             static_cast<int>(slot - part_first_[i]), context_of(tile),
                             tile.num_tokens, q_all + t * q_dim + head0 * head_dim, q_dim, group,
                             rule, &scratch,
                             part_outputs_.data() + slot * slot_floats + head0 * head_dim, q_dim,
                             part_softmax_.data() + slot * slot_heads + head0 * tile_tokens);
    }
  });
  // Each token's heads from their partitions; a token that attends fewer
  // partitions than the last of its tile combines only its own.
  pool_.ParallelFor(n_tiles * n_head_kv, [&](int64_t b, int64_t e) {
    for (int64_t it = b; it < e; ++it) {
      const int kv_head = static_cast<int>(it / n_tiles);
      const int64_t i = it % n_tiles;
      const Tile& tile = tiles_[i];
      const int64_t slot0 = part_first_[i];
      const int64_t softmax_base = static_cast<int64_t>(kv_head) * group * tile_tokens;
      for (int k = 0; k < tile.num_tokens; ++k) {
        const int parts = AttentionPartitions(context_of(tile) + k);
        for (int g = 0; g < group; ++g) {
          const int64_t h = static_cast<int64_t>(kv_head) * group + g;
          CombinePartitions(
              part_outputs_.data() + slot0 * slot_floats + k * q_dim + h * head_dim, slot_floats,
              part_softmax_.data() + slot0 * slot_heads + softmax_base + k * group + g, slot_heads,
              parts, head_dim, attn + (tile.first_token + k) * q_dim + h * head_dim);
        }
      }
      finish(tile, kv_head);
    }
  });
}

void CpuExecutor::SwiGlu(Act gate, Act up) {
  Buffer& g = Buf(gate);
  const float* u = Buf(up).data.data();
  const int64_t n_ff = g.width;
  ForEachRow(n_tokens_, [&](int64_t t) {
    row_ops_.swiglu(g.data.data() + t * n_ff, u + t * n_ff, g.data.data() + t * n_ff, n_ff);
  });
}

namespace {

// GELU's tanh approximation of every f16 value, rounded to f16 (indexed by
// the f16 bits): the GGUF ecosystem's CPU code computes GELU as this table
// at the input rounded to f16.
const std::vector<float>& GeluHalfTable() {
  static const std::vector<float> table = [] {
    std::vector<float> t(65536);
    for (uint32_t bits = 0; bits < 65536; ++bits) {
      const float x = HalfToFloat(static_cast<uint16_t>(bits));
      const float gelu =
          0.5f * x * (1.0f + std::tanh(0.79788456080286535588f * x * (1.0f + 0.044715f * x * x)));
      t[bits] = HalfToFloat(FloatToHalf(gelu));
    }
    return t;
  }();
  return table;
}

}  // namespace

void CpuExecutor::GeGlu(Act gate, Act up) {
  Buffer& g = Buf(gate);
  const float* u = Buf(up).data.data();
  const int64_t n_ff = g.width;
  const float* table = GeluHalfTable().data();
  ForEachRow(n_tokens_, [&](int64_t t) {
    float* x = g.data.data() + t * n_ff;
    const float* v = u + t * n_ff;
    for (int64_t i = 0; i < n_ff; ++i) {
      // Outside (-10, 10) GELU is 0 or x to f32 precision.
      const float a = x[i];
      const float gelu = a <= -10.0f ? 0.0f : a >= 10.0f ? a : table[FloatToHalf(a)];
      x[i] = gelu * v[i];
    }
  });
}

void CpuExecutor::Scale(Act a, float factor) {
  Buffer& buf = Buf(a);
  ForEachRow(Rows(a), [&](int64_t t) {
    float* x = buf.data.data() + t * buf.width;
    for (int64_t i = 0; i < buf.width; ++i) x[i] *= factor;
  });
}

void CpuExecutor::MoeFeedForward(int layer) {
  const PackedLayer& pl = packed_.layers[layer - shard_.layer_begin];
  const int64_t n = n_tokens_;
  const int n_expert = config_.n_expert;
  const int k_used = config_.n_expert_used;
  const int64_t n_embd = config_.n_embd;
  const int64_t n_ff = pl.gate_exps[0].rows();  // this device's share of each expert
  const float* x = Buf(Act::kNormed).data.data();
  float* proj = Buf(Act::kProjection).data.data();
  std::fill(proj, proj + n * n_embd, 0.0f);
  if (n == 0) return;

  // The router (worker/model/moe_routing.h).
  moe_.logits.resize(static_cast<size_t>(n * n_expert));
  kvmesh::MatMul(pl.w_gate_inp, x, n, moe_.logits.data(), pool_, &xq_);
  moe_.chosen.resize(static_cast<size_t>(n * k_used));
  moe_.weight.resize(static_cast<size_t>(n * k_used));
  ForEachRow(n, [&](int64_t t) {
    RouteToExperts(std::span<float>(moe_.logits.data() + t * n_expert, n_expert), k_used,
                   config_.norm_topk_prob, moe_.chosen.data() + t * k_used,
                   moe_.weight.data() + t * k_used);
  });

  // Tokens grouped by expert: each expert's matrices are read once for all
  // the step's tokens routed to it.
  moe_.routed.resize(static_cast<size_t>(n_expert));
  for (auto& r : moe_.routed) r.clear();
  for (int64_t i = 0; i < n * k_used; ++i) moe_.routed[moe_.chosen[i]].push_back(i);
  for (int e = 0; e < n_expert; ++e) {
    const std::vector<int64_t>& routed = moe_.routed[e];
    const int64_t m = static_cast<int64_t>(routed.size());
    if (m == 0) continue;
    moe_.in.resize(static_cast<size_t>(m * n_embd));
    for (int64_t i = 0; i < m; ++i) {
      std::memcpy(moe_.in.data() + i * n_embd, x + (routed[i] / k_used) * n_embd,
                  n_embd * sizeof(float));
    }
    moe_.gate.resize(static_cast<size_t>(m * n_ff));
    moe_.up.resize(static_cast<size_t>(m * n_ff));
    moe_.out.resize(static_cast<size_t>(m * n_embd));
    const MatMulTarget gate_up[] = {{&pl.gate_exps[e], moe_.gate.data()},
                                    {&pl.up_exps[e], moe_.up.data()}};
    MatMulShared(moe_.in.data(), m, gate_up, pool_, &xq_);
    ForEachRow(m, [&](int64_t i) {
      float* g = moe_.gate.data() + i * n_ff;
      row_ops_.swiglu(g, moe_.up.data() + i * n_ff, g, n_ff);
    });
    kvmesh::MatMul(pl.down_exps[e], moe_.gate.data(), m, moe_.out.data(), pool_, &xq_);
    for (int64_t i = 0; i < m; ++i) {
      const float w = moe_.weight[routed[i]];
      float* y = proj + (routed[i] / k_used) * n_embd;
      const float* o = moe_.out.data() + i * n_embd;
      for (int64_t j = 0; j < n_embd; ++j) y[j] += w * o[j];
    }
  }
  if (config_.n_ff_shexp > 0) SharedExpert(layer, x, proj);
}

void CpuExecutor::SharedExpert(int layer, const float* x, float* proj) {
  const int local = layer - shard_.layer_begin;
  const PackedLayer& pl = packed_.layers[local];
  const std::vector<float>& gate_inp = weights_.weights.layers[local].gate_inp_shexp;
  const int64_t n = n_tokens_;
  const int64_t n_embd = config_.n_embd;
  const int64_t n_ff = pl.gate_shexp.rows();  // this device's share
  moe_.gate.resize(static_cast<size_t>(n * n_ff));
  moe_.up.resize(static_cast<size_t>(n * n_ff));
  moe_.out.resize(static_cast<size_t>(n * n_embd));
  const MatMulTarget gate_up[] = {{&pl.gate_shexp, moe_.gate.data()},
                                  {&pl.up_shexp, moe_.up.data()}};
  MatMulShared(x, n, gate_up, pool_, &xq_);
  ForEachRow(n, [&](int64_t t) {
    float* g = moe_.gate.data() + t * n_ff;
    row_ops_.swiglu(g, moe_.up.data() + t * n_ff, g, n_ff);
  });
  kvmesh::MatMul(pl.down_shexp, moe_.gate.data(), n, moe_.out.data(), pool_, &xq_);
  ForEachRow(n, [&](int64_t t) {
    const float* xt = x + t * n_embd;
    float dot = 0.0f;
    for (int64_t j = 0; j < n_embd; ++j) dot += xt[j] * gate_inp[j];
    const float scale = 1.0f / (1.0f + std::exp(-dot));
    const float* o = moe_.out.data() + t * n_embd;
    float* y = proj + t * n_embd;
    for (int64_t j = 0; j < n_embd; ++j) y[j] += scale * o[j];
  });
}

void CpuExecutor::Add(Act dst, Act src) {
  float* x = Buf(dst).data.data();
  const float* y = Buf(src).data.data();
  const int64_t n = Rows(dst) * Buf(dst).width;
  for (int64_t i = 0; i < n; ++i) x[i] += y[i];
}

void CpuExecutor::AllReduce(Act a) {
  if (comm_ == nullptr || comm_->size() == 1) return;
  const auto start = std::chrono::steady_clock::now();
  Buffer& buf = Buf(a);
  Status s = comm_->AllReduceSum(buf.data.data(), Rows(a) * buf.width);
  if (!s.ok() && error_.ok()) error_ = s.WithPrefix("device " + shard_.device.Name());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  comm_seconds_.store(comm_seconds_.load(std::memory_order_relaxed) + seconds,
                      std::memory_order_relaxed);
}

void CpuExecutor::ReadResidual(float* dst) {
  const Buffer& x = Buf(Act::kResidual);
  std::memcpy(dst, x.data.data(), n_tokens_ * x.width * sizeof(float));
}

void CpuExecutor::WriteResidual(const float* src) {
  Buffer& x = Buf(Act::kResidual);
  std::memcpy(x.data.data(), src, n_tokens_ * x.width * sizeof(float));
}

template <typename Fn>
void CpuExecutor::ForEachBlockRun(const Fn& fn) const {
  const size_t k_row = layout_.k_row_bytes(), v_row = layout_.v_row_bytes();
  const size_t heads = static_cast<size_t>(layout_.n_head_kv);
  const size_t bs = static_cast<size_t>(layout_.block_size);
  const size_t k_bytes = k_row * heads * bs;
  const size_t layer_bytes = (k_row + v_row) * heads * bs;
  const size_t h0 = static_cast<size_t>(shard_.kv_head_begin);
  const size_t nh = static_cast<size_t>(shard_.num_kv_heads());
  for (int l = shard_.layer_begin; l < shard_.layer_end; ++l) {
    const size_t base = static_cast<size_t>(l) * layer_bytes;
    for (size_t s = 0; s < bs; ++s) {
      const int ll = l - shard_.layer_begin, slot = static_cast<int>(s);
      fn(base + (s * heads + h0) * k_row, ll, slot, /*value=*/false, nh * k_row);
      fn(base + k_bytes + (s * heads + h0) * v_row, ll, slot, /*value=*/true, nh * v_row);
    }
  }
}

void CpuExecutor::ReadBlock(int32_t block, uint8_t* full) const {
  ForEachBlockRun([&](size_t offset, int layer, int slot, bool value, size_t bytes) {
    const uint8_t* row =
        value ? pages_.VRow(layer, block, slot, 0) : pages_.KRow(layer, block, slot, 0);
    std::memcpy(full + offset, row, bytes);
  });
}

void CpuExecutor::WriteBlock(int32_t block, const uint8_t* full) {
  ForEachBlockRun([&](size_t offset, int layer, int slot, bool value, size_t bytes) {
    uint8_t* row = value ? pages_.VRow(layer, block, slot, 0) : pages_.KRow(layer, block, slot, 0);
    std::memcpy(row, full + offset, bytes);
  });
}

DeviceCounters CpuExecutor::counters() const {
  DeviceCounters c;
  c.weight_bytes = packed_.storage.size();
  if (shard_.embeds) c.weight_bytes += weights_.weights.token_embd.num_bytes();
  c.kv_bytes = pages_.total_bytes();
  c.comm_seconds = comm_seconds_.load(std::memory_order_relaxed);
  return c;
}

Status CpuExecutor::TakeError() {
  Status s = error_;
  error_ = Status::Ok();
  return s;
}

}  // namespace kvmesh
