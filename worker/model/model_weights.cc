#include "worker/model/model_weights.h"

#include "common/half.h"

namespace kvmesh {
namespace {

std::string Shape(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

class Loader {
 public:
  explicit Loader(const gguf::GgufFile& file) : file_(file) {}

  StatusOr<const gguf::TensorInfo*> Find(const std::string& name, bool required) const {
    const gguf::TensorInfo* t = file_.FindTensor(name);
    if (t == nullptr && required) {
      return NotFoundError(file_.name() + ": tensor " + name + " is missing");
    }
    return t;
  }

  Status CheckShape(const gguf::TensorInfo& t, const std::vector<int64_t>& want) const {
    if (t.dims != want) {
      return InvalidArgumentError(file_.name() + ": tensor " + std::string(t.name) + " has shape " +
                                  t.ShapeString() + ", expected " + Shape(want));
    }
    return Status::Ok();
  }

  StatusOr<WeightMatrix> Matrix(const std::string& name, int64_t cols, int64_t rows) const {
    ASSIGN_OR_RETURN(const gguf::TensorInfo* t, Find(name, true));
    return MatrixFrom(*t, cols, rows);
  }

  StatusOr<WeightMatrix> MatrixFrom(const gguf::TensorInfo& t, int64_t cols, int64_t rows) const {
    RETURN_IF_ERROR(CheckShape(t, {cols, rows}));
    const kernels::TypeTraits* traits = kernels::GetTypeTraits(t.type());
    if (traits == nullptr || traits->vec_dot == nullptr || IsKvOnlyTensorType(t.type_id)) {
      return UnimplementedError(
          file_.name() + ": tensor " + std::string(t.name) + " has type " +
          TensorTypeName(t.type_id) +
          ", which kvmesh cannot compute with (supported: F32, F16, BF16, "
          "Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS, "
          "IQ3_S, IQ3_XXS, IQ2_XS)");
    }
    WeightMatrix m;
    m.name = std::string(t.name);
    m.type = t.type();
    m.rows = rows;
    m.cols = cols;
    m.row_bytes = kernels::RowSizeBytes(*traits, cols);
    m.data = t.data;
    m.traits = traits;
    return m;
  }

  // Rows [first, first + rows) of the 2-D tensor `name` [cols, total_rows]
  // (a fused tensor's part), as a view named `part`.
  StatusOr<WeightMatrix> Rows(const std::string& name, int64_t cols, int64_t total_rows,
                              int64_t first, int64_t rows, const std::string& part) const {
    ASSIGN_OR_RETURN(WeightMatrix m, Matrix(name, cols, total_rows));
    m.name = name + "[" + part + "]";
    m.data = m.Row(first);
    m.rows = rows;
    return m;
  }

  // The `experts` matrices of a 3-D tensor [cols, rows, experts], each a view.
  StatusOr<std::vector<WeightMatrix>> Experts(const std::string& name, int64_t cols, int64_t rows,
                                              int64_t experts) const {
    ASSIGN_OR_RETURN(const gguf::TensorInfo* t, Find(name, true));
    RETURN_IF_ERROR(CheckShape(*t, {cols, rows, experts}));
    gguf::TensorInfo first = *t;
    first.dims = {cols, rows};
    ASSIGN_OR_RETURN(WeightMatrix m, MatrixFrom(first, cols, rows));
    std::vector<WeightMatrix> out;
    for (int64_t e = 0; e < experts; ++e) {
      WeightMatrix expert = m;
      expert.name = name + "[" + std::to_string(e) + "]";
      expert.data = t->data + static_cast<size_t>(e) * m.num_bytes();
      out.push_back(std::move(expert));
    }
    return out;
  }

  // A 1-D tensor of `n` values decoded to float; empty when optional and absent.
  StatusOr<std::vector<float>> Vector(const std::string& name, int64_t n, bool required) const {
    ASSIGN_OR_RETURN(const gguf::TensorInfo* t, Find(name, required));
    if (t == nullptr) return std::vector<float>();
    RETURN_IF_ERROR(CheckShape(*t, {n}));
    const kernels::TypeTraits* traits = kernels::GetTypeTraits(t->type());
    if (traits == nullptr || n % traits->block_size != 0) {
      return UnimplementedError(file_.name() + ": tensor " + std::string(t->name) + " has type " +
                                TensorTypeName(t->type_id) + ", which cannot be decoded here");
    }
    std::vector<float> out(n);
    traits->to_float(t->data, out.data(), n);
    return out;
  }

 private:
  const gguf::GgufFile& file_;
};

}  // namespace

uint64_t ModelWeights::BytesPerToken() const {
  uint64_t total = output.num_bytes();
  for (const LayerWeights& l : layers) {
    total += l.wq.num_bytes() + l.wk.num_bytes() + l.wv.num_bytes() + l.wo.num_bytes() +
             l.w_gate.num_bytes() + l.w_up.num_bytes() + l.w_down.num_bytes();
    if (!l.gate_exps.empty()) {
      total +=
          l.w_gate_inp.num_bytes() + l.gate_shexp.num_bytes() + l.up_shexp.num_bytes() +
          l.down_shexp.num_bytes() +
          static_cast<uint64_t>(n_expert_used) *
              (l.gate_exps[0].num_bytes() + l.up_exps[0].num_bytes() + l.down_exps[0].num_bytes());
    }
  }
  return total;
}

StatusOr<ModelWeights> ModelWeights::Load(const gguf::GgufFile& file, const ModelConfig& c) {
  const Loader load(file);
  ModelWeights w;
  ASSIGN_OR_RETURN(w.token_embd, load.Matrix("token_embd.weight", c.n_embd, c.n_vocab));
  ASSIGN_OR_RETURN(w.output_norm, load.Vector("output_norm.weight", c.n_embd, true));
  ASSIGN_OR_RETURN(const gguf::TensorInfo* out, load.Find("output.weight", false));
  // Gemma 2's head is its embedding, whatever else the file holds (as
  // llama.cpp reads it); Gemma 3 reads output.weight when there is one.
  if (out != nullptr && c.arch != ModelArch::kGemma2) {
    ASSIGN_OR_RETURN(w.output, load.MatrixFrom(*out, c.n_embd, c.n_vocab));
  } else {
    w.output = w.token_embd;
    w.tied_output = true;
  }
  ASSIGN_OR_RETURN(w.rope_freq_factors, load.Vector("rope_freqs.weight", c.rope.n_rot / 2, false));
  for (const char* name : {"rope_factors_long.weight", "rope_factors_short.weight"}) {
    if (file.FindTensor(name) != nullptr) {  // Phi-3's 128k variants (LongRoPE)
      return UnimplementedError(file.name() + ": tensor " + name +
                                " (per-frequency rope factors chosen by context length, "
                                "LongRoPE) is not supported");
    }
  }

  // Every layer has tensors of its own: a block count past the file's
  // tensor count is a malformed header, not a reason to allocate that much.
  if (c.n_layer < 0 || static_cast<size_t>(c.n_layer) > file.tensors().size()) {
    return InvalidArgumentError("block_count " + std::to_string(c.n_layer) +
                                " is more than the file's " +
                                std::to_string(file.tensors().size()) + " tensors");
  }
  w.layers.resize(c.n_layer);
  w.n_expert_used = c.n_expert_used;
  for (int i = 0; i < c.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    LayerWeights& l = w.layers[i];
    ASSIGN_OR_RETURN(l.attn_norm, load.Vector(p + "attn_norm.weight", c.n_embd, true));
    ASSIGN_OR_RETURN(const gguf::TensorInfo* qkv, load.Find(p + "attn_qkv.weight", false));
    if (qkv != nullptr) {  // Q, K and V fused (phi3): views of its rows
      const std::string name = p + "attn_qkv.weight";
      const int64_t total = c.n_embd_q() + c.n_embd_k() + c.n_embd_v();
      ASSIGN_OR_RETURN(l.wq, load.Rows(name, c.n_embd, total, 0, c.n_embd_q(), "q"));
      ASSIGN_OR_RETURN(l.wk, load.Rows(name, c.n_embd, total, c.n_embd_q(), c.n_embd_k(), "k"));
      ASSIGN_OR_RETURN(
          l.wv, load.Rows(name, c.n_embd, total, c.n_embd_q() + c.n_embd_k(), c.n_embd_v(), "v"));
    } else {
      ASSIGN_OR_RETURN(l.wq, load.Matrix(p + "attn_q.weight", c.n_embd, c.n_embd_q()));
      ASSIGN_OR_RETURN(l.wk, load.Matrix(p + "attn_k.weight", c.n_embd, c.n_embd_k()));
      ASSIGN_OR_RETURN(l.wv, load.Matrix(p + "attn_v.weight", c.n_embd, c.n_embd_v()));
    }
    ASSIGN_OR_RETURN(l.wo, load.Matrix(p + "attn_output.weight", c.n_embd_q(), c.n_embd));
    if (c.has_post_norms) {
      ASSIGN_OR_RETURN(l.attn_post_norm,
                       load.Vector(p + "post_attention_norm.weight", c.n_embd, true));
      ASSIGN_OR_RETURN(l.ffn_post_norm, load.Vector(p + "post_ffw_norm.weight", c.n_embd, true));
    }
    if (c.has_qkv_bias) {
      ASSIGN_OR_RETURN(l.bq, load.Vector(p + "attn_q.bias", c.n_embd_q(), true));
      ASSIGN_OR_RETURN(l.bk, load.Vector(p + "attn_k.bias", c.n_embd_k(), true));
      ASSIGN_OR_RETURN(l.bv, load.Vector(p + "attn_v.bias", c.n_embd_v(), true));
    }
    if (c.has_qk_norm) {
      ASSIGN_OR_RETURN(l.q_norm, load.Vector(p + "attn_q_norm.weight", c.head_dim, true));
      ASSIGN_OR_RETURN(l.k_norm, load.Vector(p + "attn_k_norm.weight", c.head_dim, true));
    }
    ASSIGN_OR_RETURN(l.ffn_norm, load.Vector(p + "ffn_norm.weight", c.n_embd, true));
    if (c.is_moe()) {
      ASSIGN_OR_RETURN(l.w_gate_inp, load.Matrix(p + "ffn_gate_inp.weight", c.n_embd, c.n_expert));
      ASSIGN_OR_RETURN(l.gate_exps,
                       load.Experts(p + "ffn_gate_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert));
      ASSIGN_OR_RETURN(l.up_exps,
                       load.Experts(p + "ffn_up_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert));
      ASSIGN_OR_RETURN(l.down_exps,
                       load.Experts(p + "ffn_down_exps.weight", c.n_ff_exp, c.n_embd, c.n_expert));
      if (c.n_ff_shexp > 0) {
        ASSIGN_OR_RETURN(l.gate_inp_shexp,
                         load.Vector(p + "ffn_gate_inp_shexp.weight", c.n_embd, true));
        ASSIGN_OR_RETURN(l.gate_shexp,
                         load.Matrix(p + "ffn_gate_shexp.weight", c.n_embd, c.n_ff_shexp));
        ASSIGN_OR_RETURN(l.up_shexp,
                         load.Matrix(p + "ffn_up_shexp.weight", c.n_embd, c.n_ff_shexp));
        ASSIGN_OR_RETURN(l.down_shexp,
                         load.Matrix(p + "ffn_down_shexp.weight", c.n_ff_shexp, c.n_embd));
      }
      continue;
    }
    if (c.arch == ModelArch::kPhi3) {
      // Gate and up fused in ffn_up: the gate's n_ff rows, then up's.
      const std::string name = p + "ffn_up.weight";
      ASSIGN_OR_RETURN(l.w_gate, load.Rows(name, c.n_embd, 2 * c.n_ff, 0, c.n_ff, "gate"));
      ASSIGN_OR_RETURN(l.w_up, load.Rows(name, c.n_embd, 2 * c.n_ff, c.n_ff, c.n_ff, "up"));
    } else {
      ASSIGN_OR_RETURN(l.w_gate, load.Matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff));
      ASSIGN_OR_RETURN(l.w_up, load.Matrix(p + "ffn_up.weight", c.n_embd, c.n_ff));
    }
    ASSIGN_OR_RETURN(l.w_down, load.Matrix(p + "ffn_down.weight", c.n_ff, c.n_embd));
  }
  return w;
}

}  // namespace kvmesh
