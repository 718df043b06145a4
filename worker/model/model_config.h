// ModelConfig: the hyper-parameters of a llama-family model, read from GGUF
// metadata and validated. Immutable once built.
//
// Supported architectures (general.architecture):
//   llama  — Llama 2/3, TinyLlama, Mistral, stories260K: RoPE on adjacent pairs
//   qwen2  — biases on Q, K and V; RoPE on halves (NeoX style)
//   qwen3  — RMSNorm on each Q and K head before RoPE; RoPE on halves
//   qwen3moe — qwen3's attention; each layer's feed-forward is a mixture of
//              experts: softmax over the router's logits, the top k experts,
//              their weights renormalised to sum to 1
//   qwen2moe — qwen2's attention; a mixture of experts (softmax, top k, not
//              renormalised) plus a shared expert on every token, scaled by
//              sigmoid(x · ffn_gate_inp_shexp)
//   phi3   — Q, K and V fused in attn_qkv, gate and up in ffn_up; RoPE on halves
//   gemma2 — the embedding scaled by sqrt(n_embd); RMSNorm after attention and
//            after the feed-forward too (post_attention_norm, post_ffw_norm);
//            GeGLU; queries scaled before attention; attention scores and
//            final logits soft-capped (cap · tanh(x / cap)); every other
//            layer, starting with the first, attends a sliding window;
//            the head tied to the embedding; RoPE on halves
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "common/gguf/gguf_file.h"
#include "common/status.h"

namespace kvmesh {

enum class ModelArch { kLlama, kQwen2, kQwen3, kQwen3Moe, kQwen2Moe, kPhi3, kGemma2, kGemma3 };
// The feed-forward's activation: act(gate) · up.
enum class FfnActivation {
  kSilu,      // SwiGLU
  kGeluTanh,  // GeGLU with GELU's tanh approximation
};
enum class RopeStyle {
  kAdjacentPairs,  // rotates (x[2i], x[2i+1]); ggml's "normal" mode
  kHalves,         // rotates (x[i], x[i + n_rot/2]); ggml's "neox" mode
};
enum class RopeScaling { kNone, kLinear, kYarn };

std::string_view ModelArchName(ModelArch arch);

struct RopeConfig {
  RopeStyle style = RopeStyle::kAdjacentPairs;
  int n_rot = 0;  // leading dims of each head that are rotated
  float freq_base = 10000.0f;
  float freq_scale = 1.0f;  // 1 / scaling factor
  RopeScaling scaling = RopeScaling::kNone;
  int original_context = 0;      // context the model was trained at (YaRN)
  float yarn_ext_factor = 0.0f;  // 0 disables the YaRN ramp
  float yarn_attn_factor = 1.0f;
  float yarn_beta_fast = 32.0f;
  float yarn_beta_slow = 1.0f;
};

// The most query heads that may share one KV head (grouped-query attention);
// every real model has at most 16.
inline constexpr int kMaxQueryHeadsPerKvHead = 64;
// The most experts a mixture-of-experts layer may have, and route each token
// to (real models: up to 256 and 8).
inline constexpr int kMaxExperts = 1024;
inline constexpr int kMaxExpertsUsed = 64;

struct ModelConfig {
  ModelArch arch = ModelArch::kLlama;
  std::string arch_name;  // as in the file
  std::string name;       // general.name, or the file's base name
  int n_layer = 0;
  int n_embd = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int head_dim = 0;    // key length per head
  int head_dim_v = 0;  // value length per head
  int n_ff = 0;
  int n_vocab = 0;
  int n_ctx_train = 0;
  float rms_eps = 1e-5f;
  RopeConfig rope;
  bool has_qkv_bias = false;
  bool has_qk_norm = false;
  // Mixture of experts (0 experts: a dense feed-forward of n_ff).
  int n_expert = 0;
  int n_expert_used = 0;        // top k
  int n_ff_exp = 0;             // each expert's feed-forward width
  bool norm_topk_prob = false;  // the k weights are divided by their sum
  int n_ff_shexp = 0;           // > 0: a shared expert of this width (qwen2moe)
  // Gemma-style options (all off for the other families).
  FfnActivation ffn_activation = FfnActivation::kSilu;
  float embed_scale = 0.0f;     // > 0: the embedding rows are multiplied by it
  float query_scale = 0.0f;     // > 0: queries are multiplied by it before attention,
                                // which then scales scores by 1 (else 1/sqrt(head_dim))
  float attn_softcap = 0.0f;    // > 0: scores become cap · tanh(score / cap)
  float final_softcap = 0.0f;   // > 0: logits become cap · tanh(logit / cap)
  bool has_post_norms = false;  // RMSNorm on the attention and FFN outputs
  int sliding_window = 0;       // > 0: windowed layers attend this many positions
  // Layer l is windowed when l % period < period - 1; every layer when 0.
  int sliding_window_period = 0;
  // Gemma 3: the windowed layers rotate with their own base and no scaling;
  // `rope` is then the global layers' rotation.
  std::optional<RopeConfig> window_rope;

  bool is_moe() const { return n_expert > 0; }
  // The positions a query of windowed layer `layer` attends, itself
  // included; 0 for a layer that attends the whole context.
  int LayerWindow(int layer) const {
    if (sliding_window <= 0) return 0;
    const bool windowed =
        sliding_window_period <= 0 || layer % sliding_window_period < sliding_window_period - 1;
    return windowed ? sliding_window : 0;
  }
  // The widest window of any layer (0: no layer has one).
  int MaxWindow() const {
    int widest = 0;
    for (int l = 0; l < n_layer; ++l) widest = std::max(widest, LayerWindow(l));
    return widest;
  }
  // Whether layer `layer` rotates with window_rope (else with rope).
  bool UsesWindowRope(int layer) const { return window_rope && LayerWindow(layer) > 0; }
  const RopeConfig& LayerRope(int layer) const {
    return UsesWindowRope(layer) ? *window_rope : rope;
  }

  int n_embd_q() const { return n_head * head_dim; }
  int n_embd_k() const { return n_head_kv * head_dim; }
  int n_embd_v() const { return n_head_kv * head_dim_v; }

  // Reads and validates the hyper-parameters. Errors name the file and the key.
  static StatusOr<ModelConfig> FromGguf(const gguf::GgufFile& file);
};

}  // namespace kvmesh
