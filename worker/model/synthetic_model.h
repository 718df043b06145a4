// Synthetic llama-family models: GGUF files with the shape of a real model,
// random weights and a real tokenizer, for benchmarking the engine against
// other implementations on the same bytes (`kvmesh synth`).
//
// Weights are drawn from a seeded generator (bell-shaped, like N(0, sigma)),
// scaled so activations stay in a trained model's range: projections into
// the residual stream have sigma 0.02, the two projections out of a block
// (attn_output, ffn_down) 0.02 / sqrt(2 * n_layer), norm weights are 1, and
// the output head is scaled so logits spread over a few units - greedy
// decoding then has a clear winner at almost every step. Tensor types follow
// llama.cpp's quantizer for the chosen mix (see TensorTypeFor), so a file is
// laid out like `llama-quantize` would lay out a real model of that shape.
// The tokenizer metadata (tokenizer.*) is copied from a vocab GGUF, which
// also fixes the vocabulary size.
//
// Everything is deterministic in (shape, mix, seed, vocab): the same
// arguments give byte-identical files whatever the thread count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/tensor_type.h"
#include "common/thread_pool.h"

namespace kvmesh {

struct SyntheticShape {
  std::string name;
  int n_layer = 0;
  int n_embd = 0;
  int n_head = 0;
  int n_head_kv = 0;
  int n_ff = 0;
  float rope_freq_base = 10000.0f;
  bool tied_embeddings = false;
  int context_length = 2048;
  // Vocab GGUF used when none is given, relative to the shared directory.
  std::string default_vocab;
  // "llama", "qwen3" (per-head q/k norms), "qwen3moe" (qwen3 with a
  // mixture of experts in place of each dense feed-forward), "qwen2moe"
  // (Q/K/V biases, a mixture of experts and a shared expert) or "phi3"
  // (attn_qkv and a gate/up ffn_up fused) or "gemma2" (post-norms, GeGLU,
  // soft caps, windowed attention on every other layer, tied head) or
  // "gemma3" (Gemma 2's layout with per-head q/k norms, no score cap, a
  // window on all but each sliding_window_pattern-th layer, which rotate
  // with their own base)
  std::string arch = "llama";
  int head_dim = 0;  // 0: n_embd / n_head
  // Chat template written into the file when none is given, relative to the
  // shared directory; empty: the vocab's own, if it has one.
  std::string default_chat_template = {};
  // > 1: the vocab's EOS gets a logit level at which an answer sampled at
  // temperature 1 ends after about this many tokens, so agent clients see
  // turns end (random weights otherwise never emit EOS). Needs an untied
  // output head. 0: off.
  int mean_answer_tokens = 0;
  // qwen3moe: the experts per layer, how many each token uses, and each
  // expert's feed-forward width (n_ff is then only written as metadata).
  int n_expert = 0;
  int n_expert_used = 0;
  int n_ff_exp = 0;
  int n_ff_shexp = 0;  // qwen2moe: the shared expert's width
  // Control tokens appended to the vocab's (Phi-3's chat tokens: its files
  // have them, and llama.cpp looks them up by text in a phi3 file).
  std::vector<std::string_view> added_tokens = {};
  // gemma2, gemma3: the window of the windowed layers, and the soft caps
  // (0: none; gemma3 has no score cap).
  int sliding_window = 0;
  float attn_softcap = 0.0f;
  float final_softcap = 0.0f;
  // gemma3: each this-many-th layer attends the whole context; the windowed
  // layers' rotation base; the others' linear scaling factor (0: none).
  int sliding_window_pattern = 0;
  float rope_freq_base_swa = 0.0f;
  float rope_linear_factor = 0.0f;

  int HeadDim() const { return head_dim > 0 ? head_dim : n_embd / n_head; }
};

// "llama-1b" (Llama 3.2 1B), "llama-8b" (Llama 3.1 8B), "tinyllama-1.1b"
// (TinyLlama 1.1B) and "tiny-qwen3" (a 4-layer Qwen3 of width 256, head size
// 64, with the Qwen2 vocabulary, a 65536-token context, Qwen3's chat
// template, an untied head and answers of about 24 tokens: a file for
// testing agent clients), and "tiny-llama3" (the same body with Llama 3's
// 128k vocabulary and no chat template: checks that need a large real
// vocabulary), "qwen3-moe-tiny" (tiny-qwen3's body with a mixture of 8
// experts of width 256, 2 per token, in every layer) and "qwen3-moe-5b"
// (Qwen3-30B-A3B's layers and widths with 16 experts, 2 per token: 5.2 B
// parameters, 1.4 B active), and "qwen2-moe-tiny" (the same tiny body with
// Qwen2-MoE's layout: Q/K/V biases, 8 experts, 2 per token, not
// renormalised, and a shared expert of width 512), and "tiny-phi3" (Phi-3's
// layout: Q, K and V fused in attn_qkv, gate and up fused in ffn_up, no
// GQA), and "tiny-gemma2" (Gemma 2's layout on the tiny body: a 32-position
// window on layers 0 and 2, and soft caps lowered to 0.25 for scores and 15
// for logits so that both bite on random weights), "gemma2-2b" (Gemma 2
// 2B's layers and widths with a 32,000-token vocabulary), and "tiny-gemma3"
// (Gemma 3's layout on a 6-layer tiny body: q/k norms, a 32-position window
// on all layers but 2 and 5, which rotate with base 1e6 scaled by 1/8, the
// windowed ones with base 10000, and a final cap of 15); nullopt for other
// names.
std::optional<SyntheticShape> FindSyntheticShape(std::string_view name);
std::vector<std::string> SyntheticShapeNames();

// The type mixes of llama.cpp's quantizer: "f16", "q8_0", "q4_0", "q4_k_m",
// "q5_k_m", "q3_k_m", "q2_k", "iq4_nl", "iq4_xs", "iq3_s" (no importance
// matrix: the quantizers weigh values by magnitude).
enum class SyntheticMix {
  kF16,
  kQ8_0,
  kQ4_0,
  kQ4_K_M,
  kQ5_K_M,
  kQ3_K_M,
  kQ2_K,
  kIQ4_NL,
  kIQ4_XS,
  kIQ3_S,
};
std::optional<SyntheticMix> ParseSyntheticMix(std::string_view name);
std::string_view SyntheticMixName(SyntheticMix mix);

// The type llama.cpp's quantizer gives a 2-D weight for `mix` (norms are
// always F32). `name` is the GGUF tensor name ("blk.3.attn_v.weight",
// "output.weight", ...), `cols` its row length. Follows llama.cpp's rules for
// this family: the output head (or a tied token embedding) becomes Q6_K
// unless the mix is Q8_0 or F16; with Q4_K_M / Q5_K_M, attn_v and ffn_down of
// the layers where use_more_bits holds (the first and last eighth, and every
// third layer between) become Q6_K; with Q3_K_M, attn_v becomes Q5_K in the
// first two layers and Q4_K after, ffn_down Q5_K in the first sixteenth of the
// layers and Q4_K where use_more_bits holds, attn_output Q4_K; with Q2_K,
// attn_v, ffn_down and attn_output become Q3_K; with IQ3_S, attn_v becomes
// Q4_K when n_gqa (query heads per KV head) is at least 4; a fused attn_qkv
// becomes Q5_K in Q4_K_M, Q6_K in Q5_K_M and Q4_K in Q3_K_M; everything else
// gets the mix's base type. A row that is no whole number of the type's
// blocks falls back as llama.cpp does (Q2_K, Q3_K, IQ4_XS and IQ3_S to
// IQ4_NL, Q4_K to Q5_0, Q5_K to Q5_1, Q6_K to Q8_0, then F16). llama.cpp's
// rules for files with exactly 8 experts (attn_v, attn_k at Q8_0) are not
// followed.
TensorType TensorTypeFor(SyntheticMix mix, std::string_view name, int n_layer, bool tied_embeddings,
                         int64_t cols, int n_gqa = 1);

struct SynthesizeOptions {
  SyntheticShape shape;
  SyntheticMix mix = SyntheticMix::kQ4_0;
  std::string vocab_path;   // a GGUF with tokenizer.* metadata
  std::string output_path;  // the file to write
  uint64_t seed = 1;
  // Written as tokenizer.chat_template; empty: the vocab's, if any.
  std::string chat_template;
};

// Summary of a written file.
struct SynthesizeReport {
  int64_t n_vocab = 0;
  int64_t num_tensors = 0;
  uint64_t file_bytes = 0;
  uint64_t num_params = 0;
};

// Generates, quantizes and writes the model, splitting the work over `pool`.
StatusOr<SynthesizeReport> SynthesizeModel(const SynthesizeOptions& options, ThreadPool& pool);

}  // namespace kvmesh
