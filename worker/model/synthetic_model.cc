#include "worker/model/synthetic_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "common/gguf/gguf_file.h"
#include "common/gguf/gguf_writer.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh {
namespace {

using T = TensorType;

// llama.cpp's rule for which layers of a K-quant mix get more bits.
bool UseMoreBits(int layer, int n_layer) {
  return layer < n_layer / 8 || layer >= 7 * n_layer / 8 || (layer - n_layer / 8) % 3 == 2;
}

int LayerOf(std::string_view name) {
  int layer = -1;
  if (std::sscanf(std::string(name).c_str(), "blk.%d.", &layer) != 1) return -1;
  return layer;
}

bool Contains(std::string_view s, std::string_view part) {
  return s.find(part) != std::string_view::npos;
}

T BaseType(SyntheticMix mix) {
  switch (mix) {
    case SyntheticMix::kF16:
      return T::kF16;
    case SyntheticMix::kQ8_0:
      return T::kQ8_0;
    case SyntheticMix::kQ4_0:
      return T::kQ4_0;
    case SyntheticMix::kQ4_K_M:
      return T::kQ4_K;
    case SyntheticMix::kQ5_K_M:
      return T::kQ5_K;
    case SyntheticMix::kQ3_K_M:
      return T::kQ3_K;
    case SyntheticMix::kQ2_K:
      return T::kQ2_K;
    case SyntheticMix::kIQ4_NL:
      return T::kIQ4_NL;
    case SyntheticMix::kIQ4_XS:
      return T::kIQ4_XS;
    case SyntheticMix::kIQ3_S:
      return T::kIQ3_S;
  }
  return T::kF16;
}

// llama.cpp's general.file_type values of the mixes.
uint32_t FileType(SyntheticMix mix) {
  switch (mix) {
    case SyntheticMix::kF16:
      return 1;
    case SyntheticMix::kQ8_0:
      return 7;
    case SyntheticMix::kQ4_0:
      return 2;
    case SyntheticMix::kQ4_K_M:
      return 15;
    case SyntheticMix::kQ5_K_M:
      return 17;
    case SyntheticMix::kQ3_K_M:
      return 12;
    case SyntheticMix::kQ2_K:
      return 10;
    case SyntheticMix::kIQ4_NL:
      return 25;
    case SyntheticMix::kIQ4_XS:
      return 30;
    case SyntheticMix::kIQ3_S:
      return 26;
  }
  return 0;
}

// A row of the type `type` must be whole blocks; llama.cpp falls back to a
// type with smaller blocks otherwise.
T Fallback(T type, int64_t cols) {
  const kernels::TypeTraits* traits = kernels::GetReferenceTypeTraits(type);
  if (cols % traits->block_size == 0) return type;
  switch (type) {
    case T::kQ4_K:
      type = T::kQ5_0;
      break;
    case T::kQ5_K:
      type = T::kQ5_1;
      break;
    case T::kQ6_K:
      type = T::kQ8_0;
      break;
    case T::kQ2_K:
    case T::kQ3_K:
    case T::kIQ4_XS:
    case T::kIQ3_S:
      type = T::kIQ4_NL;
      break;
    default:
      return T::kF16;
  }
  return cols % kernels::GetReferenceTypeTraits(type)->block_size == 0 ? type : T::kF16;
}

// --- Random weights -----------------------------------------------------------

uint64_t SplitMix(uint64_t& state) {
  state += 0x9e3779b97f4a7c15ull;
  uint64_t z = state;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Bell-shaped with unit variance: the sum of four 16-bit uniforms (|x| < 3.47).
float Bell(uint64_t& state) {
  const uint64_t bits = SplitMix(state);
  float sum = 0.0f;
  for (int i = 0; i < 4; ++i) sum += static_cast<float>((bits >> (16 * i)) & 0xFFFF);
  return (sum * (1.0f / 65536.0f) - 2.0f) * 1.7320508f;
}

// One tensor to write. 1-D tensors (norms) are constant `fill`; 2-D ones are
// `sigma` times bell noise, row by row from a stream keyed by (seed, index,
// row), so the thread split never changes a byte.
struct TensorPlan {
  std::string name;
  T type;
  int64_t cols;
  int64_t rows;  // 0 for a 1-D tensor
  float sigma;
  float fill;
  // Ending answers (SyntheticShape::mean_answer_tokens): every row gets this
  // added to its first element; with a marked row, that row's first element
  // is `marked_value` and every other row's is 0.
  float first_offset = 0.0f;
  int64_t marked_row = -1;
  float marked_value = 0.0f;
  bool zero_first_row = false;  // writes nothing into the first coordinate
  int64_t experts = 0;          // > 0: a 3-D tensor of this many [cols, rows] matrices
};

std::vector<uint8_t> MakeTensor(const TensorPlan& plan, uint64_t seed, uint64_t index,
                                ThreadPool& pool) {
  if (plan.rows == 0) {
    std::vector<uint8_t> bytes(static_cast<size_t>(plan.cols) * sizeof(float));
    for (int64_t i = 0; i < plan.cols; ++i) std::memcpy(bytes.data() + 4 * i, &plan.fill, 4);
    return bytes;
  }
  const kernels::TypeTraits* traits = kernels::GetTypeTraits(plan.type);
  const size_t row_bytes = kernels::RowSizeBytes(*traits, plan.cols);
  const int64_t rows = plan.rows * std::max<int64_t>(1, plan.experts);  // experts one after another
  std::vector<uint8_t> bytes(row_bytes * static_cast<size_t>(rows));
  pool.ParallelFor(
      rows,
      [&](int64_t begin, int64_t end) {
        std::vector<float> row(static_cast<size_t>(plan.cols));
        for (int64_t r = begin; r < end; ++r) {
          uint64_t state = seed * 0x632be59bd9b4e019ull + index * 0x9e3779b97f4a7c15ull +
                           static_cast<uint64_t>(r) * 0xd1b54a32d192ed03ull;
          for (float& v : row) v = plan.sigma * Bell(state);
          row[0] += plan.first_offset;
          if (plan.marked_row >= 0) row[0] = r == plan.marked_row ? plan.marked_value : 0.0f;
          if (r % plan.rows == 0 && plan.zero_first_row) std::fill(row.begin(), row.end(), 0.0f);
          traits->from_float(row.data(), bytes.data() + r * row_bytes, plan.cols);
        }
      },
      /*min_chunk=*/16);
  return bytes;
}

std::vector<TensorPlan> PlanTensors(const SyntheticShape& s, SyntheticMix mix, int64_t n_vocab,
                                    int64_t eos_id) {
  const int64_t head_dim = s.HeadDim();
  const int64_t q_dim = head_dim * s.n_head;
  const int64_t kv_dim = head_dim * s.n_head_kv;
  const float sigma = 0.02f;
  const float sigma_out_proj = sigma / std::sqrt(2.0f * static_cast<float>(s.n_layer));
  // Logits spread with a standard deviation of about 3 for unit-RMS inputs.
  const float sigma_head = 3.0f / std::sqrt(static_cast<float>(s.n_embd));
  const bool gemma = s.arch == "gemma2" || s.arch == "gemma3";  // post-norms
  std::vector<TensorPlan> plans;
  auto matrix = [&](const std::string& name, int64_t cols, int64_t rows, float sd) {
    plans.push_back(
        {name, TensorTypeFor(mix, name, s.n_layer, s.tied_embeddings, cols, s.n_head / s.n_head_kv),
         cols, rows, sd, 0});
  };
  matrix("token_embd.weight", s.n_embd, n_vocab, s.tied_embeddings ? sigma_head : sigma);
  for (int i = 0; i < s.n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    plans.push_back({p + "attn_norm.weight", T::kF32, s.n_embd, 0, 0, 1.0f});
    if (s.arch == "phi3") {  // Q, K and V fused, in that order
      matrix(p + "attn_qkv.weight", s.n_embd, q_dim + 2 * kv_dim, sigma);
    } else {
      matrix(p + "attn_q.weight", s.n_embd, q_dim, sigma);
      matrix(p + "attn_k.weight", s.n_embd, kv_dim, sigma);
      matrix(p + "attn_v.weight", s.n_embd, kv_dim, sigma);
    }
    if (s.arch == "qwen2moe") {  // Q/K/V biases (zero)
      plans.push_back({p + "attn_q.bias", T::kF32, q_dim, 0, 0, 0.0f});
      plans.push_back({p + "attn_k.bias", T::kF32, kv_dim, 0, 0, 0.0f});
      plans.push_back({p + "attn_v.bias", T::kF32, kv_dim, 0, 0, 0.0f});
    }
    if (s.arch == "qwen3" || s.arch == "qwen3moe" || s.arch == "gemma3") {  // q/k norms
      plans.push_back({p + "attn_q_norm.weight", T::kF32, head_dim, 0, 0, 1.0f});
      plans.push_back({p + "attn_k_norm.weight", T::kF32, head_dim, 0, 0, 1.0f});
    }
    matrix(p + "attn_output.weight", q_dim, s.n_embd, sigma_out_proj);
    // Gemma 2's post-norms bring each block's output to RMS 6, so the
    // layers move the residual more than the (tied) embedding does, and the
    // model does not merely repeat the last token.
    if (gemma) plans.push_back({p + "post_attention_norm.weight", T::kF32, s.n_embd, 0, 0, 6.0f});
    plans.push_back({p + "ffn_norm.weight", T::kF32, s.n_embd, 0, 0, 1.0f});
    if (s.n_expert > 0) {
      // The router stays F32 (llama.cpp never quantizes ffn_gate_inp); its
      // logits spread by about 1, so tokens choose different experts.
      plans.push_back({p + "ffn_gate_inp.weight", T::kF32, s.n_embd, s.n_expert,
                       1.0f / std::sqrt(static_cast<float>(s.n_embd)), 0});
      for (const char* name : {"ffn_gate_exps.weight", "ffn_up_exps.weight"}) {
        matrix(p + name, s.n_embd, s.n_ff_exp, sigma);
        plans.back().experts = s.n_expert;
      }
      matrix(p + "ffn_down_exps.weight", s.n_ff_exp, s.n_embd, sigma_out_proj);
      plans.back().experts = s.n_expert;
      if (s.n_ff_shexp > 0) {
        // The shared expert's gate is a vector: a constant one scales each
        // token by sigmoid(0.05 · the sum of its normalised residual).
        plans.push_back({p + "ffn_gate_inp_shexp.weight", T::kF32, s.n_embd, 0, 0, 0.05f});
        matrix(p + "ffn_gate_shexp.weight", s.n_embd, s.n_ff_shexp, sigma);
        matrix(p + "ffn_up_shexp.weight", s.n_embd, s.n_ff_shexp, sigma);
        matrix(p + "ffn_down_shexp.weight", s.n_ff_shexp, s.n_embd, sigma_out_proj);
      }
      continue;
    }
    if (s.arch == "phi3") {  // gate and up fused: the gate's rows, then up's
      matrix(p + "ffn_up.weight", s.n_embd, 2 * s.n_ff, sigma);
    } else {
      matrix(p + "ffn_gate.weight", s.n_embd, s.n_ff, sigma);
      matrix(p + "ffn_up.weight", s.n_embd, s.n_ff, sigma);
    }
    matrix(p + "ffn_down.weight", s.n_ff, s.n_embd, sigma_out_proj);
    if (gemma) plans.push_back({p + "post_ffw_norm.weight", T::kF32, s.n_embd, 0, 0, 6.0f});
  }
  plans.push_back({"output_norm.weight", T::kF32, s.n_embd, 0, 0, 1.0f});
  if (!s.tied_embeddings) matrix("output.weight", s.n_embd, n_vocab, sigma_head);
  if (s.mean_answer_tokens > 1 && !s.tied_embeddings && eos_id >= 0 && eos_id < n_vocab) {
    // The residual stream's first coordinate is set aside: every embedding
    // holds kLean there and no layer writes to it, so after the final norm
    // it reads about the same at every position. Only EOS's head row reads
    // that coordinate, with the weight that lifts its logit to where softmax
    // picks it with probability 1/mean_answer_tokens against n_vocab logits
    // of spread about 2 (log-sum-exp: ln n_vocab + 2^2/2). kNormalized is
    // that reading as measured on tiny-qwen3: sampled at temperature 1, its
    // answers then end after about 30 tokens (median of 16 runs: 3 to 133).
    constexpr float kLean = 1.0f;
    constexpr float kNormalized = 9.0f;
    const float level = std::log(static_cast<float>(n_vocab)) + 2.0f -
                        std::log(static_cast<float>(s.mean_answer_tokens - 1));
    for (TensorPlan& plan : plans) {
      if (plan.name == "token_embd.weight") plan.first_offset = kLean;
      if (plan.name.ends_with("attn_output.weight") || plan.name.ends_with("ffn_down.weight") ||
          plan.name.ends_with("ffn_down_exps.weight")) {
        plan.zero_first_row = true;
      }
      if (plan.name == "output.weight") {
        plan.marked_row = eos_id;
        plan.marked_value = level / kNormalized;
      }
    }
  }
  return plans;
}

// Gemma 2's layout on `body`: its head size, the window of every other
// layer, and the caps on scores and logits (the body ties its head).
SyntheticShape Gemma2Layout(SyntheticShape body, int head_dim, int window, float attn_cap,
                            float final_cap) {
  body.arch = "gemma2";
  body.head_dim = head_dim;
  body.sliding_window = window;
  body.attn_softcap = attn_cap;
  body.final_softcap = final_cap;
  return body;
}

}  // namespace

std::optional<SyntheticShape> FindSyntheticShape(std::string_view name) {
  if (name == "llama-1b") {
    // Llama 3.2 1B.
    return SyntheticShape{"llama-1b", 16,        2048, 32,     8,
                          8192,       500000.0f, true, 131072, "vocab/ggml-vocab-llama-bpe.gguf"};
  }
  if (name == "llama-8b") {
    // Llama 3.1 8B: the shape the GPU targets are quoted on.
    return SyntheticShape{"llama-8b", 32,        4096,  32,     8,
                          14336,      500000.0f, false, 131072, "vocab/ggml-vocab-llama-bpe.gguf"};
  }
  if (name == "tiny-qwen3") {
    // Untied (unlike Qwen3-0.6B): with random weights a tied head mostly
    // repeats the last token.
    SyntheticShape shape{"tiny-qwen3", 4,          256,   4,     2,
                         768,          1000000.0f, false, 65536, "vocab/ggml-vocab-qwen2.gguf"};
    shape.mean_answer_tokens = 24;
    shape.arch = "qwen3";
    shape.head_dim = 64;
    shape.default_chat_template = "chat-templates/templates/Qwen-Qwen3-0.6B.jinja";
    return shape;
  }
  if (name == "qwen3-moe-tiny") {
    // Qwen3-MoE's layout on tiny-qwen3's body: a file for tests (no EOS
    // tilt: greedy comparisons need answers that do not end at once).
    SyntheticShape shape = *FindSyntheticShape("tiny-qwen3");
    shape.name = "qwen3-moe-tiny";
    shape.mean_answer_tokens = 0;
    shape.arch = "qwen3moe";
    shape.n_expert = 8;
    shape.n_expert_used = 2;
    shape.n_ff_exp = 256;
    return shape;
  }
  if (name == "qwen3-moe-5b") {
    // Qwen3-30B-A3B's widths and depth (48 layers, width 2048, 32 query and
    // 4 KV heads of 128, experts of width 768) with 16 experts, 2 per token,
    // instead of 128 and 8: 5.2 B parameters, 1.4 B of them active per token
    // (1.7 B with the head), so that it fits this kind of 24 GiB machine.
    SyntheticShape shape{"qwen3-moe-5b", 48,         2048,  32,    4,
                         6144,           1000000.0f, false, 40960, "vocab/ggml-vocab-qwen2.gguf"};
    shape.arch = "qwen3moe";
    shape.head_dim = 128;
    shape.n_expert = 16;
    shape.n_expert_used = 2;
    shape.n_ff_exp = 768;
    shape.default_chat_template = "chat-templates/templates/Qwen-Qwen3-0.6B.jinja";
    return shape;
  }
  if (name == "qwen2-moe-tiny") {
    // Qwen2-MoE's layout (Qwen1.5-MoE, Qwen2-57B-A14B) on the same body.
    SyntheticShape shape = *FindSyntheticShape("qwen3-moe-tiny");
    shape.name = "qwen2-moe-tiny";
    shape.arch = "qwen2moe";
    shape.context_length = 32768;
    shape.default_chat_template.clear();
    shape.n_ff_shexp = 512;
    return shape;
  }
  if (name == "mixtral-tiny") {
    // Mixtral's layout (a llama file with experts: 8 experts, 2 per token,
    // renormalised, no shared expert) on a tiny body with the llama vocabulary.
    SyntheticShape shape{"mixtral-tiny",
                         4,
                         256,
                         4,
                         2,
                         768,
                         1000000.0f,
                         false,
                         32768,
                         "vocab/ggml-vocab-llama-spm.gguf"};
    shape.n_expert = 8;
    shape.n_expert_used = 2;
    shape.n_ff_exp = 256;
    return shape;
  }
  if (name == "tiny-phi3") {
    // Phi-3's layout (Q, K and V fused; gate and up fused; rotation of
    // halves; no GQA) on a tiny body with the llama vocabulary it uses.
    SyntheticShape shape{"tiny-phi3", 4,        256,   4,    4,
                         768,         10000.0f, false, 4096, "vocab/ggml-vocab-llama-spm.gguf"};
    shape.arch = "phi3";
    shape.added_tokens = {"<|endoftext|>",    "<|assistant|>",    "<|placeholder1|>",
                          "<|placeholder2|>", "<|placeholder3|>", "<|placeholder4|>",
                          "<|system|>",       "<|end|>",          "<|placeholder5|>",
                          "<|placeholder6|>", "<|user|>"};
    return shape;
  }
  if (name == "tiny-gemma2") {
    // Gemma 2's layout on the tiny body: head tied to the embedding, RMSNorm
    // after attention and after the FFN, GeGLU, windows on every other
    // layer. The window (32 positions) and the caps are small so that a
    // short test exercises them.
    return Gemma2Layout(
        {"tiny-gemma2", 4, 256, 4, 2, 768, 10000.0f, true, 8192, "vocab/ggml-vocab-llama-spm.gguf"},
        64, 32, 0.25f, 15.0f);
  }
  if (name == "tiny-gemma3") {
    // Gemma 3's layout on the tiny body, 6 layers deep so that both kinds
    // of layer repeat: every third layer attends the whole context and
    // rotates with a large base under linear scaling (as the 4B-27B models'
    // global layers do), the others a 32-position window with their own
    // base. The final cap (15, which Gemma 3 files may carry) bites.
    SyntheticShape shape = *FindSyntheticShape("tiny-gemma2");
    shape.name = "tiny-gemma3";
    shape.arch = "gemma3";
    shape.n_layer = 6;
    shape.rope_freq_base = 1000000.0f;
    shape.sliding_window_pattern = 3;
    shape.rope_freq_base_swa = 10000.0f;
    shape.rope_linear_factor = 8.0f;
    shape.attn_softcap = 0.0f;  // Gemma 3 has none
    return shape;
  }
  if (name == "tiny-mistral") {
    // Mistral 7B v0.1's window, on every layer of a llama body (its own
    // file says llama.attention.sliding_window; llama.cpp ignores the key),
    // 32 positions wide so that a short test passes it.
    SyntheticShape shape{"tiny-mistral",
                         4,
                         256,
                         4,
                         2,
                         768,
                         10000.0f,
                         false,
                         8192,
                         "vocab/ggml-vocab-llama-spm.gguf"};
    shape.sliding_window = 32;
    return shape;
  }
  if (name == "gemma2-2b") {
    // Gemma 2 2B's layers and widths (heads of 256, a 4096-position window
    // on every other layer, caps of 50 and 30), with the llama vocabulary
    // of 32,000 in place of its 256,000: a file for speed against
    // llama.cpp.
    return Gemma2Layout({"gemma2-2b", 26, 2304, 8, 4, 9216, 10000.0f, true, 8192,
                         "vocab/ggml-vocab-llama-spm.gguf"},
                        256, 4096, 50.0f, 30.0f);
  }
  if (name == "tiny-llama3") {
    // Llama 3's 128k vocabulary on a tiny body: for checks that need a real
    // large vocabulary (token masks) and run in seconds.
    SyntheticShape shape{"tiny-llama3", 4,         256,   4,    2,
                         768,           500000.0f, false, 8192, "vocab/ggml-vocab-llama-bpe.gguf"};
    shape.mean_answer_tokens = 24;
    return shape;
  }
  if (name == "tinyllama-1.1b") {
    return SyntheticShape{"tinyllama-1.1b",
                          22,
                          2048,
                          32,
                          4,
                          5632,
                          10000.0f,
                          false,
                          2048,
                          "vocab/ggml-vocab-llama-spm.gguf"};
  }
  return std::nullopt;
}

std::vector<std::string> SyntheticShapeNames() {
  return {"llama-1b",     "llama-8b",       "tinyllama-1.1b", "tiny-qwen3",   "tiny-llama3",
          "qwen3-moe-5b", "qwen2-moe-tiny", "qwen3-moe-tiny", "mixtral-tiny", "tiny-phi3",
          "tiny-mistral", "gemma2-2b",      "tiny-gemma2",    "tiny-gemma3"};
}

std::optional<SyntheticMix> ParseSyntheticMix(std::string_view name) {
  for (SyntheticMix mix :
       {SyntheticMix::kF16, SyntheticMix::kQ8_0, SyntheticMix::kQ4_0, SyntheticMix::kQ4_K_M,
        SyntheticMix::kQ5_K_M, SyntheticMix::kQ3_K_M, SyntheticMix::kQ2_K, SyntheticMix::kIQ4_NL,
        SyntheticMix::kIQ4_XS, SyntheticMix::kIQ3_S}) {
    if (name == SyntheticMixName(mix)) return mix;
  }
  return std::nullopt;
}

std::string_view SyntheticMixName(SyntheticMix mix) {
  switch (mix) {
    case SyntheticMix::kF16:
      return "f16";
    case SyntheticMix::kQ8_0:
      return "q8_0";
    case SyntheticMix::kQ4_0:
      return "q4_0";
    case SyntheticMix::kQ4_K_M:
      return "q4_k_m";
    case SyntheticMix::kQ5_K_M:
      return "q5_k_m";
    case SyntheticMix::kQ3_K_M:
      return "q3_k_m";
    case SyntheticMix::kQ2_K:
      return "q2_k";
    case SyntheticMix::kIQ4_NL:
      return "iq4_nl";
    case SyntheticMix::kIQ4_XS:
      return "iq4_xs";
    case SyntheticMix::kIQ3_S:
      return "iq3_s";
  }
  return "?";
}

TensorType TensorTypeFor(SyntheticMix mix, std::string_view name, int n_layer, bool tied_embeddings,
                         int64_t cols, int n_gqa) {
  const T base = BaseType(mix);
  if (mix == SyntheticMix::kF16) return T::kF16;  // converted, not quantized
  const bool is_head = name == "output.weight" || (tied_embeddings && name == "token_embd.weight");
  if (is_head) {
    if (cols % 256 != 0 || base == T::kQ8_0) return T::kQ8_0;
    return T::kQ6_K;
  }
  T type = base;
  const int layer = LayerOf(name);
  const bool attn_v = Contains(name, "attn_v.weight");
  const bool ffn_down = Contains(name, "ffn_down");
  const bool attn_qkv = Contains(name, "attn_qkv.weight");  // fused Q, K, V (phi3)
  switch (mix) {
    case SyntheticMix::kQ4_K_M:
    case SyntheticMix::kQ5_K_M:
      if ((attn_v || ffn_down) && layer >= 0 && UseMoreBits(layer, n_layer)) type = T::kQ6_K;
      if (attn_qkv) type = mix == SyntheticMix::kQ4_K_M ? T::kQ5_K : T::kQ6_K;
      break;
    case SyntheticMix::kQ3_K_M:
      // The value projections of the first two layers and the first
      // sixteenth's down projections get Q5_K; the other value projections,
      // the more-bits layers' down projections and every attention output Q4_K.
      if (attn_v) type = layer < 2 ? T::kQ5_K : T::kQ4_K;
      if (ffn_down && layer >= 0) {
        if (layer < n_layer / 16) {
          type = T::kQ5_K;
        } else if (UseMoreBits(layer, n_layer)) {
          type = T::kQ4_K;
        }
      }
      if (Contains(name, "attn_output.weight") || attn_qkv) type = T::kQ4_K;
      break;
    case SyntheticMix::kQ2_K:
      if (attn_v || ffn_down || Contains(name, "attn_output.weight")) type = T::kQ3_K;
      break;
    case SyntheticMix::kIQ3_S:
      if (attn_v && n_gqa >= 4) type = T::kQ4_K;  // a shared value head is worth more bits
      break;
    default:
      break;
  }
  return Fallback(type, cols);
}

StatusOr<SynthesizeReport> SynthesizeModel(const SynthesizeOptions& options, ThreadPool& pool) {
  const SyntheticShape& s = options.shape;
  if (s.n_layer <= 0 || s.n_embd <= 0 || s.n_head <= 0 || s.n_head_kv <= 0 || s.n_ff <= 0 ||
      (s.head_dim == 0 && s.n_embd % s.n_head != 0) || s.n_head % s.n_head_kv != 0 ||
      (s.arch != "llama" && s.arch != "qwen3" && s.arch != "qwen3moe" && s.arch != "qwen2moe" &&
       s.arch != "phi3" && s.arch != "gemma2" && s.arch != "gemma3") ||
      (s.arch == "gemma2" && (!s.tied_embeddings || s.sliding_window <= 0 ||
                              !(s.attn_softcap > 0.0f) || !(s.final_softcap > 0.0f))) ||
      (s.arch == "gemma3" && (!s.tied_embeddings || s.attn_softcap != 0.0f)) ||
      ((s.arch == "qwen3moe" || s.arch == "qwen2moe") && s.n_expert == 0) ||
      (s.n_expert > 0 && s.arch != "qwen3moe" && s.arch != "qwen2moe" && s.arch != "llama") ||
      (s.n_ff_shexp > 0 && s.arch != "qwen2moe") ||
      (s.n_expert > 0 &&
       (s.n_expert_used <= 0 || s.n_expert_used > s.n_expert || s.n_ff_exp <= 0))) {
    return InvalidArgumentError("synthetic shape " + s.name + " is inconsistent");
  }
  ASSIGN_OR_RETURN(std::unique_ptr<gguf::GgufFile> vocab, gguf::GgufFile::Open(options.vocab_path));
  ASSIGN_OR_RETURN(const gguf::Array* tokens,
                   vocab->GetArray("tokenizer.ggml.tokens", gguf::ValueType::kString));
  const int64_t n_vocab = static_cast<int64_t>(tokens->elements.size() + s.added_tokens.size());
  if (n_vocab == 0) return InvalidArgumentError(options.vocab_path + ": the vocabulary is empty");

  gguf::GgufWriter writer;
  const std::string a = s.arch + ".";
  writer.SetString("general.architecture", s.arch);
  writer.SetString("general.name",
                   "kvmesh-synthetic-" + s.name + "-" + std::string(SyntheticMixName(options.mix)));
  writer.SetUint32("general.file_type", FileType(options.mix));
  writer.SetUint32("general.quantization_version", 2);
  writer.SetUint32(a + "vocab_size", static_cast<uint32_t>(n_vocab));
  writer.SetUint32(a + "context_length", static_cast<uint32_t>(s.context_length));
  writer.SetUint32(a + "embedding_length", static_cast<uint32_t>(s.n_embd));
  writer.SetUint32(a + "block_count", static_cast<uint32_t>(s.n_layer));
  // Mixtral's files give the experts' width as feed_forward_length.
  const bool mixtral = s.arch == "llama" && s.n_expert > 0;
  writer.SetUint32(a + "feed_forward_length", static_cast<uint32_t>(mixtral ? s.n_ff_exp : s.n_ff));
  writer.SetUint32(a + "attention.head_count", static_cast<uint32_t>(s.n_head));
  writer.SetUint32(a + "attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
  if (s.head_dim > 0) {
    writer.SetUint32(a + "attention.key_length", static_cast<uint32_t>(s.head_dim));
    writer.SetUint32(a + "attention.value_length", static_cast<uint32_t>(s.head_dim));
  }
  writer.SetUint32(a + "rope.dimension_count", static_cast<uint32_t>(s.HeadDim()));
  writer.SetFloat32(a + "rope.freq_base", s.rope_freq_base);
  writer.SetFloat32(a + "attention.layer_norm_rms_epsilon",
                    s.arch == "llama" || s.arch == "phi3" ? 1e-5f : 1e-6f);
  if (s.sliding_window > 0) {
    writer.SetUint32(a + "attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
  }
  if (s.sliding_window_pattern > 0) {
    writer.SetUint32(a + "attention.sliding_window_pattern",
                     static_cast<uint32_t>(s.sliding_window_pattern));
  }
  if (s.rope_freq_base_swa > 0.0f)
    writer.SetFloat32(a + "rope.freq_base_swa", s.rope_freq_base_swa);
  if (s.rope_linear_factor > 0.0f) {
    writer.SetString(a + "rope.scaling.type", "linear");
    writer.SetFloat32(a + "rope.scaling.factor", s.rope_linear_factor);
  }
  if (s.attn_softcap > 0.0f) writer.SetFloat32(a + "attn_logit_softcapping", s.attn_softcap);
  if (s.final_softcap > 0.0f) writer.SetFloat32(a + "final_logit_softcapping", s.final_softcap);
  if (s.n_expert > 0) {
    writer.SetUint32(a + "expert_count", static_cast<uint32_t>(s.n_expert));
    writer.SetUint32(a + "expert_used_count", static_cast<uint32_t>(s.n_expert_used));
    if (!mixtral) {
      writer.SetUint32(a + "expert_feed_forward_length", static_cast<uint32_t>(s.n_ff_exp));
    }
    if (s.n_ff_shexp > 0) {
      writer.SetUint32(a + "expert_shared_feed_forward_length",
                       static_cast<uint32_t>(s.n_ff_shexp));
    }
  }
  for (const gguf::KeyValue& kv : vocab->metadata()) {
    if (kv.key.substr(0, 10) != "tokenizer.") continue;
    if (!options.chat_template.empty() && kv.key == "tokenizer.chat_template") continue;
    const gguf::Array* array = kv.value.AsArray();
    if (!s.added_tokens.empty() && array != nullptr &&
        (kv.key == "tokenizer.ggml.tokens" || kv.key == "tokenizer.ggml.scores" ||
         kv.key == "tokenizer.ggml.token_type")) {
      gguf::Array extended = *array;
      for (std::string_view token : s.added_tokens) {
        if (kv.key == "tokenizer.ggml.tokens") {
          extended.elements.push_back(gguf::Value::String(token));
        } else if (kv.key == "tokenizer.ggml.scores") {
          extended.elements.push_back(gguf::Value::Float(gguf::ValueType::kFloat32, 0.0));
        } else {
          extended.elements.push_back(gguf::Value::Signed(gguf::ValueType::kInt32, 3));  // control
        }
      }
      writer.SetValue(std::string(kv.key), gguf::Value::MakeArray(std::move(extended)));
      continue;
    }
    writer.SetValue(std::string(kv.key), kv.value);
  }

  if (!options.chat_template.empty()) {
    writer.SetString("tokenizer.chat_template", options.chat_template);
  }

  SynthesizeReport report;
  report.n_vocab = n_vocab;
  int64_t eos_id = -1;
  if (auto eos = vocab->GetUint("tokenizer.ggml.eos_token_id"); eos.ok()) {
    eos_id = static_cast<int64_t>(*eos);
  }
  const std::vector<TensorPlan> plans = PlanTensors(s, options.mix, n_vocab, eos_id);
  for (size_t i = 0; i < plans.size(); ++i) {
    const TensorPlan& plan = plans[i];
    std::vector<uint8_t> bytes = MakeTensor(plan, options.seed, i, pool);
    std::vector<int64_t> dims = {plan.cols};
    if (plan.rows > 0) dims.push_back(plan.rows);
    if (plan.experts > 0) dims.push_back(plan.experts);
    report.num_params += static_cast<uint64_t>(plan.cols) * std::max<int64_t>(1, plan.rows) *
                         std::max<int64_t>(1, plan.experts);
    RETURN_IF_ERROR(writer.AddTensor(plan.name, plan.type, std::move(dims), std::move(bytes)));
  }
  report.num_tensors = static_cast<int64_t>(plans.size());
  RETURN_IF_ERROR(writer.WriteFile(options.output_path));
  std::error_code error;
  report.file_bytes = std::filesystem::file_size(options.output_path, error);
  return report;
}

}  // namespace kvmesh
