#include "worker/runtime/weight_shard.h"

#include <cstring>

#include "common/check.h"

namespace kvmesh {
namespace {

std::vector<float> SliceVector(const std::vector<float>& v, int64_t begin, int64_t end) {
  if (v.empty()) return {};
  return std::vector<float>(v.begin() + begin, v.begin() + end);
}

}  // namespace

WeightMatrix SliceRows(const WeightMatrix& m, int64_t begin, int64_t end) {
  KVMESH_CHECK(begin >= 0 && begin <= end && end <= m.rows);
  WeightMatrix s = m;
  s.rows = end - begin;
  s.data = m.data + static_cast<size_t>(begin) * m.row_bytes;
  return s;
}

WeightMatrix SliceColumns(const WeightMatrix& m, int64_t begin, int64_t end,
                          std::unique_ptr<uint8_t[]>* storage) {
  KVMESH_CHECK(m.traits != nullptr && begin >= 0 && begin <= end && end <= m.cols);
  const int64_t block = m.traits->block_size;
  KVMESH_CHECK(begin % block == 0 && end % block == 0);
  if (begin == 0 && end == m.cols) return m;
  WeightMatrix s = m;
  s.cols = end - begin;
  s.row_bytes = kernels::RowSizeBytes(*m.traits, s.cols);
  const size_t skip = kernels::RowSizeBytes(*m.traits, begin);
  *storage = std::make_unique<uint8_t[]>(s.row_bytes * static_cast<size_t>(m.rows));
  for (int64_t r = 0; r < m.rows; ++r) {
    std::memcpy(storage->get() + r * s.row_bytes, m.Row(r) + skip, s.row_bytes);
  }
  s.data = storage->get();
  return s;
}

WeightShard WeightShard::Make(const ModelWeights& w, const ModelConfig& c,
                              const DeviceShard& shard) {
  WeightShard out;
  ModelWeights& sw = out.weights;
  sw.token_embd = w.token_embd;
  sw.output_norm = w.output_norm;
  sw.tied_output = w.tied_output;
  sw.rope_freq_factors = w.rope_freq_factors;
  sw.n_expert_used = w.n_expert_used;
  if (shard.computes_logits()) {
    sw.output = SliceRows(w.output, shard.vocab_begin, shard.vocab_end);
  } else {
    sw.output = SliceRows(w.output, 0, 0);
  }
  const int64_t hd = c.head_dim;
  const int64_t hdv = c.head_dim_v;
  const int64_t q0 = shard.q_head_begin * hd, q1 = shard.q_head_end * hd;
  const int64_t k0 = shard.kv_head_begin * hd, k1 = shard.kv_head_end * hd;
  const int64_t v0 = shard.kv_head_begin * hdv, v1 = shard.kv_head_end * hdv;
  for (int l = shard.layer_begin; l < shard.layer_end; ++l) {
    const LayerWeights& src = w.layers[l];
    LayerWeights dst;
    dst.attn_norm = src.attn_norm;
    dst.ffn_norm = src.ffn_norm;
    dst.attn_post_norm = src.attn_post_norm;
    dst.ffn_post_norm = src.ffn_post_norm;
    dst.q_norm = src.q_norm;
    dst.k_norm = src.k_norm;
    dst.wq = SliceRows(src.wq, q0, q1);
    dst.wk = SliceRows(src.wk, k0, k1);
    dst.wv = SliceRows(src.wv, v0, v1);
    dst.bq = SliceVector(src.bq, q0, q1);
    dst.bk = SliceVector(src.bk, k0, k1);
    dst.bv = SliceVector(src.bv, v0, v1);
    out.storage.emplace_back();
    dst.wo = SliceColumns(src.wo, q0, q1, &out.storage.back());
    if (c.is_moe()) {  // the router whole; the same columns of every expert
      dst.w_gate_inp = src.w_gate_inp;
      for (size_t e = 0; e < src.gate_exps.size(); ++e) {
        dst.gate_exps.push_back(SliceRows(src.gate_exps[e], shard.ff_begin, shard.ff_end));
        dst.up_exps.push_back(SliceRows(src.up_exps[e], shard.ff_begin, shard.ff_end));
        out.storage.emplace_back();
        dst.down_exps.push_back(
            SliceColumns(src.down_exps[e], shard.ff_begin, shard.ff_end, &out.storage.back()));
      }
      dst.gate_inp_shexp = src.gate_inp_shexp;
      if (c.n_ff_shexp > 0) {
        dst.gate_shexp = SliceRows(src.gate_shexp, shard.shexp_begin, shard.shexp_end);
        dst.up_shexp = SliceRows(src.up_shexp, shard.shexp_begin, shard.shexp_end);
        out.storage.emplace_back();
        dst.down_shexp =
            SliceColumns(src.down_shexp, shard.shexp_begin, shard.shexp_end, &out.storage.back());
      }
      sw.layers.push_back(std::move(dst));
      continue;
    }
    dst.w_gate = SliceRows(src.w_gate, shard.ff_begin, shard.ff_end);
    dst.w_up = SliceRows(src.w_up, shard.ff_begin, shard.ff_end);
    out.storage.emplace_back();
    dst.w_down = SliceColumns(src.w_down, shard.ff_begin, shard.ff_end, &out.storage.back());
    sw.layers.push_back(std::move(dst));
  }
  return out;
}

}  // namespace kvmesh
