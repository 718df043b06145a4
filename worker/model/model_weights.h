// ModelWeights: typed, shape-checked views of a llama-family model's tensors.
//
// Matrices point into the GGUF mapping (zero copy) and keep their on-disk type;
// 1-D tensors (norm weights, biases, RoPE frequency factors) are decoded to
// float once at load. The GgufFile must outlive the weights. Immutable after
// load; safe to read from any thread.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/gguf/gguf_file.h"
#include "common/status.h"
#include "worker/kernels/cpu/type_traits.h"
#include "worker/model/model_config.h"

namespace kvmesh {

// A weight matrix of `rows` output features by `cols` input features, stored
// row by row (GGUF dims [cols, rows]).
struct WeightMatrix {
  std::string name;
  TensorType type = TensorType::kF32;
  int64_t rows = 0;
  int64_t cols = 0;
  size_t row_bytes = 0;
  const uint8_t* data = nullptr;
  const kernels::TypeTraits* traits = nullptr;

  const uint8_t* Row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  uint64_t num_bytes() const { return static_cast<uint64_t>(rows) * row_bytes; }
};

struct LayerWeights {
  std::vector<float> attn_norm;
  WeightMatrix wq, wk, wv, wo;
  std::vector<float> bq, bk, bv;      // qwen2 only (empty otherwise)
  std::vector<float> q_norm, k_norm;  // qwen3 only: per-head RMSNorm weights
  std::vector<float> ffn_norm;
  // gemma2 only: RMSNorm weights of the attention's and the FFN's outputs.
  std::vector<float> attn_post_norm, ffn_post_norm;
  WeightMatrix w_gate, w_up, w_down;  // dense feed-forward (empty in a mixture of experts)
  // Mixture of experts: the router (n_expert rows) and each expert's gate,
  // up and down matrices, views into the file's 3-D ffn_*_exps tensors.
  WeightMatrix w_gate_inp;
  std::vector<WeightMatrix> gate_exps, up_exps, down_exps;
  // A shared expert every token runs through (qwen2moe), scaled by
  // sigmoid(x · gate_inp_shexp); empty otherwise.
  std::vector<float> gate_inp_shexp;
  WeightMatrix gate_shexp, up_shexp, down_shexp;
};

struct ModelWeights {
  WeightMatrix token_embd;  // rows = vocab, cols = n_embd
  std::vector<float> output_norm;
  WeightMatrix output;  // the embedding itself when the model ties them
  bool tied_output = false;
  std::vector<float> rope_freq_factors;  // empty, or n_rot/2 divisors of each frequency
  std::vector<LayerWeights> layers;

  int n_expert_used = 0;  // experts each token runs through (mixture of experts)

  // Bytes of weights read to produce one token (every matrix once, the
  // embedding row aside; of a mixture of experts, the router and
  // n_expert_used experts per layer): the numerator of the decode roofline.
  uint64_t BytesPerToken() const;

  // Finds, shape-checks and type-checks every tensor the config needs. Errors
  // name the file and the tensor ("tensor blk.3.attn_q.weight has shape
  // [64, 32], expected [64, 64]").
  static StatusOr<ModelWeights> Load(const gguf::GgufFile& file, const ModelConfig& config);
};

}  // namespace kvmesh
