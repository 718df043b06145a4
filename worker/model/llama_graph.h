// LlamaGraph: the llama-family forward pass (llama, mistral, qwen2, qwen3,
// qwen3moe, qwen2moe, phi3, gemma2), written once over GraphBackend
// (worker/runtime/graph_backend.h) for every backend and every split:
//
//   embeddings (× sqrt(n_embd) for gemma2)
//   per layer: norm → Q, K, V (+ biases, + per-head norms) → RoPE
//              (→ query scale) → paged attention → output projection
//              → [all-reduce] (→ post-norm) → residual
//              → norm → gate, up → SwiGLU or GeGLU → down → [all-reduce]
//              (→ post-norm) → residual
//              (a mixture of experts: norm → MoeFeedForward → residual)
//   final norm of the rows that need logits → logits (the executor
//   soft-caps them where the model says)
//
// Run() executes a range of layers on one backend: all of them on a single
// device or on each device of a tensor split (whose backends make the
// all-reduces real), a device's own range in a layer split. The graph holds
// only the config; it is immutable and may be shared between threads.
#pragma once

#include "worker/model/model_config.h"
#include "worker/runtime/graph_backend.h"

namespace kvmesh {

class LlamaGraph {
 public:
  explicit LlamaGraph(const ModelConfig& config) : config_(config) {}

  struct Range {
    int layer_begin = 0;
    int layer_end = 0;
    bool embed = false;   // start from the token embeddings
    bool logits = false;  // end with the logits of the step's logit rows
  };

  void Run(GraphBackend& backend, const Range& range) const;

 private:
  void AttentionBlock(GraphBackend& b, int layer) const;
  void FeedForwardBlock(GraphBackend& b, int layer) const;

  const ModelConfig& config_;
};

}  // namespace kvmesh
