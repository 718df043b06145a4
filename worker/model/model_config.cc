#include "worker/model/model_config.h"

#include <cmath>
#include <filesystem>
#include <limits>

namespace kvmesh {

std::string_view ModelArchName(ModelArch arch) {
  switch (arch) {
    case ModelArch::kLlama:
      return "llama";
    case ModelArch::kQwen2:
      return "qwen2";
    case ModelArch::kQwen3:
      return "qwen3";
    case ModelArch::kQwen3Moe:
      return "qwen3moe";
    case ModelArch::kQwen2Moe:
      return "qwen2moe";
    case ModelArch::kPhi3:
      return "phi3";
    case ModelArch::kGemma2:
      return "gemma2";
    case ModelArch::kGemma3:
      return "gemma3";
  }
  return "?";
}

namespace {

// Reads `<arch>.<suffix>` as a positive int that fits the engine's int sizes.
class KeyReader {
 public:
  KeyReader(const gguf::GgufFile& file, std::string arch) : file_(file), arch_(std::move(arch)) {}

  std::string Key(std::string_view suffix) const { return arch_ + "." + std::string(suffix); }

  StatusOr<int> PositiveInt(std::string_view suffix) const {
    const std::string key = Key(suffix);
    const gguf::Value* v = file_.Find(key);
    if (v == nullptr) {
      return NotFoundError(file_.name() + ": metadata key \"" + key + "\" is missing");
    }
    if (const gguf::Array* a = v->AsArray()) {
      // Per-layer arrays are accepted when every layer has the same value.
      if (a->elements.empty()) return Bad(key, "is an empty array");
      auto first = a->elements[0].AsInt64();
      for (const gguf::Value& e : a->elements) {
        if (!first || e.AsInt64() != first) {
          return UnimplementedError(file_.name() + ": metadata key \"" + key +
                                    "\" varies per layer, which is not supported");
        }
      }
      return Checked(key, first);
    }
    return Checked(key, v->AsInt64());
  }

  StatusOr<int> OptionalPositiveInt(std::string_view suffix, int fallback) const {
    if (file_.Find(Key(suffix)) == nullptr) return fallback;
    return PositiveInt(suffix);
  }

  StatusOr<float> OptionalFloat(std::string_view suffix, float fallback) const {
    const std::string key = Key(suffix);
    const gguf::Value* v = file_.Find(key);
    if (v == nullptr) return fallback;
    auto d = v->AsDouble();
    if (!d) return Bad(key, "is not a number");
    return static_cast<float>(*d);
  }

  Status Bad(const std::string& key, const std::string& what) const {
    return InvalidArgumentError(file_.name() + ": metadata key \"" + key + "\" " + what);
  }

 private:
  StatusOr<int> Checked(const std::string& key, std::optional<int64_t> v) const {
    if (!v) return Bad(key, "is not an integer");
    if (*v <= 0 || *v > (1 << 30)) {
      return Bad(key, "= " + std::to_string(*v) + " is outside 1..2^30");
    }
    return static_cast<int>(*v);
  }

  const gguf::GgufFile& file_;
  std::string arch_;
};

// The mixture-of-experts keys. A llama file with experts is Mixtral: its
// experts are as wide as feed_forward_length says (no expert width key), and
// their weights are renormalised over the top k. An arch without experts in
// kvmesh and expert features kvmesh does not compute (shared experts, other
// gating functions) are errors naming the key.
Status ReadExperts(const gguf::GgufFile& file, const KeyReader& r, ModelConfig* c) {
  const bool mixtral = c->arch == ModelArch::kLlama && file.Find(r.Key("expert_count")) != nullptr;
  if (c->arch != ModelArch::kQwen3Moe && c->arch != ModelArch::kQwen2Moe && !mixtral) {
    if (file.Find(r.Key("expert_count")) != nullptr) {
      return UnimplementedError(file.name() + ": metadata key \"" + r.Key("expert_count") +
                                "\": " + c->arch_name +
                                " with experts is not supported (mixture-of-experts "
                                "architectures: qwen3moe, qwen2moe, llama (Mixtral))");
    }
    return Status::Ok();
  }
  if (mixtral) c->norm_topk_prob = true;
  const bool shared = c->arch == ModelArch::kQwen2Moe;
  for (const char* unsupported : {"expert_shared_count", "expert_gating_func",
                                  "expert_weights_scale", "expert_group_count"}) {
    if (file.Find(r.Key(unsupported)) != nullptr) {
      return UnimplementedError(file.name() + ": metadata key \"" + r.Key(unsupported) +
                                "\" is not supported for " + c->arch_name);
    }
  }
  ASSIGN_OR_RETURN(c->n_expert, r.PositiveInt("expert_count"));
  ASSIGN_OR_RETURN(c->n_expert_used, r.PositiveInt("expert_used_count"));
  if (mixtral) {
    ASSIGN_OR_RETURN(const int n_ff, r.PositiveInt("feed_forward_length"));
    ASSIGN_OR_RETURN(c->n_ff_exp, r.OptionalPositiveInt("expert_feed_forward_length", n_ff));
  } else {
    ASSIGN_OR_RETURN(c->n_ff_exp, r.PositiveInt("expert_feed_forward_length"));
  }
  if (shared) {
    ASSIGN_OR_RETURN(c->n_ff_shexp, r.PositiveInt("expert_shared_feed_forward_length"));
  } else if (file.Find(r.Key("expert_shared_feed_forward_length")) != nullptr) {
    return UnimplementedError(file.name() + ": metadata key \"" +
                              r.Key("expert_shared_feed_forward_length") +
                              "\" is not supported for " + c->arch_name);
  }
  if (c->n_expert > kMaxExperts) {
    return r.Bad(r.Key("expert_count"), "= " + std::to_string(c->n_expert) + " is more than " +
                                            std::to_string(kMaxExperts) + " experts");
  }
  if (c->n_expert_used > c->n_expert || c->n_expert_used > kMaxExpertsUsed) {
    return r.Bad(r.Key("expert_used_count"),
                 "= " + std::to_string(c->n_expert_used) + " is more than the " +
                     std::to_string(c->n_expert) + " experts (or more than " +
                     std::to_string(kMaxExpertsUsed) + ")");
  }
  if (const gguf::Value* norm = file.Find(r.Key("expert_weights_norm"))) {
    const auto b = norm->AsBool();
    if (!b) return r.Bad(r.Key("expert_weights_norm"), "is not a boolean");
    c->norm_topk_prob = *b;
  }
  return Status::Ok();
}

// Gemma 2's options: its soft caps (50 and 30 when the file has none, as the
// published models use), its window (4096 unless given) on every other layer
// from the first, and its query scale: 1/sqrt(n_embd / n_head) for the 27B
// model (46 layers), 1/sqrt(head size) otherwise, as llama.cpp chooses.
Status ReadGemma2(const gguf::GgufFile& file, const KeyReader& r, ModelConfig* c) {
  c->embed_scale = std::sqrt(static_cast<float>(c->n_embd));
  c->query_scale = c->n_layer == 46 ? 1.0f / std::sqrt(static_cast<float>(c->n_embd / c->n_head))
                                    : 1.0f / std::sqrt(static_cast<float>(c->head_dim));
  ASSIGN_OR_RETURN(c->attn_softcap, r.OptionalFloat("attn_logit_softcapping", 50.0f));
  ASSIGN_OR_RETURN(c->final_softcap, r.OptionalFloat("final_logit_softcapping", 30.0f));
  for (const auto& [key, value] : {std::pair{"attn_logit_softcapping", c->attn_softcap},
                                   std::pair{"final_logit_softcapping", c->final_softcap}}) {
    if (!(value > 0.0f) || !std::isfinite(value)) return r.Bad(r.Key(key), "must be > 0");
  }
  ASSIGN_OR_RETURN(c->sliding_window, r.OptionalPositiveInt("attention.sliding_window", 4096));
  c->sliding_window_period = 2;
  if (file.Find(r.Key("attention.sliding_window_pattern")) != nullptr) {
    ASSIGN_OR_RETURN(c->sliding_window_period, r.PositiveInt("attention.sliding_window_pattern"));
  }
  return Status::Ok();
}

// Gemma 3's options, read after the rotation: a window only when the file
// gives one (attention.sliding_window), on every layer but each period-th
// (attention.sliding_window_pattern, 6 unless given); the windowed layers
// rotate with their own base (rope.freq_base_swa, 10000 unless given) and no
// scaling factor, the others with rope.*; no score cap; a final cap only when
// the file gives one; the query scale as Gemma 2's, for the 27B model at 62
// layers. As llama.cpp reads it.
Status ReadGemma3(const gguf::GgufFile& file, const KeyReader& r, ModelConfig* c) {
  c->embed_scale = std::sqrt(static_cast<float>(c->n_embd));
  c->query_scale = c->n_layer == 62 ? 1.0f / std::sqrt(static_cast<float>(c->n_embd / c->n_head))
                                    : 1.0f / std::sqrt(static_cast<float>(c->head_dim));
  ASSIGN_OR_RETURN(c->final_softcap, r.OptionalFloat("final_logit_softcapping", 0.0f));
  if (!(c->final_softcap >= 0.0f) || !std::isfinite(c->final_softcap)) {
    return r.Bad(r.Key("final_logit_softcapping"), "must be >= 0");
  }
  ASSIGN_OR_RETURN(const int window, r.OptionalPositiveInt("attention.sliding_window", 0));
  if (window == 0) return Status::Ok();
  c->sliding_window = window;
  c->sliding_window_period = 6;
  if (file.Find(r.Key("attention.sliding_window_pattern")) != nullptr) {
    ASSIGN_OR_RETURN(c->sliding_window_period, r.PositiveInt("attention.sliding_window_pattern"));
  }
  RopeConfig local = c->rope;
  ASSIGN_OR_RETURN(local.freq_base, r.OptionalFloat("rope.freq_base_swa", 10000.0f));
  if (!(local.freq_base > 1.0f)) return r.Bad(r.Key("rope.freq_base_swa"), "must be > 1");
  local.freq_scale = 1.0f;
  if (local.scaling == RopeScaling::kLinear) local.scaling = RopeScaling::kNone;
  c->window_rope = local;
  return Status::Ok();
}

// A llama file's window, when it gives one (llama.attention.sliding_window
// above 0): on every layer, as Mistral 7B v0.1 applies its 4096 positions.
// llama.cpp ignores the key, so on such a file the two agree only within
// the window (docs/kv-cache.md, "Mistral's sliding window").
Status ReadLlamaWindow(const gguf::GgufFile& file, const KeyReader& r, ModelConfig* c) {
  const gguf::Value* v = file.Find(r.Key("attention.sliding_window"));
  if (v == nullptr || v->AsInt64() == std::optional<int64_t>(0)) return Status::Ok();
  ASSIGN_OR_RETURN(c->sliding_window, r.PositiveInt("attention.sliding_window"));
  c->sliding_window_period = 0;
  return Status::Ok();
}

}  // namespace

StatusOr<ModelConfig> ModelConfig::FromGguf(const gguf::GgufFile& file) {
  ModelConfig c;
  ASSIGN_OR_RETURN(std::string_view arch, file.GetString("general.architecture"));
  c.arch_name = std::string(arch);
  if (arch == "llama") {
    c.arch = ModelArch::kLlama;
    c.rope.style = RopeStyle::kAdjacentPairs;
  } else if (arch == "qwen2") {
    c.arch = ModelArch::kQwen2;
    c.rope.style = RopeStyle::kHalves;
    c.has_qkv_bias = true;
  } else if (arch == "qwen3") {
    c.arch = ModelArch::kQwen3;
    c.rope.style = RopeStyle::kHalves;
    c.has_qk_norm = true;
  } else if (arch == "qwen2moe") {
    c.arch = ModelArch::kQwen2Moe;
    c.rope.style = RopeStyle::kHalves;
    c.has_qkv_bias = true;
  } else if (arch == "qwen3moe") {
    c.arch = ModelArch::kQwen3Moe;
    c.rope.style = RopeStyle::kHalves;
    c.has_qk_norm = true;
    c.norm_topk_prob = true;
  } else if (arch == "phi3") {
    // Phi-3's attention window (phi3.attention.sliding_window) is not
    // applied, as llama.cpp does not apply it: every position sees the
    // whole context.
    c.arch = ModelArch::kPhi3;
    c.rope.style = RopeStyle::kHalves;
  } else if (arch == "gemma2" || arch == "gemma3") {
    c.arch = arch == "gemma2" ? ModelArch::kGemma2 : ModelArch::kGemma3;
    c.rope.style = RopeStyle::kHalves;
    c.ffn_activation = FfnActivation::kGeluTanh;
    c.has_post_norms = true;
    c.has_qk_norm = arch == "gemma3";
  } else {
    return UnimplementedError(file.name() + ": architecture \"" + std::string(arch) +
                              "\" is not supported (supported: llama, qwen2, qwen3, qwen3moe, "
                              "qwen2moe, phi3, gemma2, gemma3)");
  }
  if (auto n = file.GetString("general.name"); n.ok()) {
    c.name = std::string(*n);
  } else {
    c.name = std::filesystem::path(file.name()).stem().string();
  }

  const KeyReader r(file, c.arch_name);
  ASSIGN_OR_RETURN(c.n_layer, r.PositiveInt("block_count"));
  ASSIGN_OR_RETURN(c.n_embd, r.PositiveInt("embedding_length"));
  RETURN_IF_ERROR(ReadExperts(file, r, &c));
  ASSIGN_OR_RETURN(c.n_ff, c.is_moe() ? r.OptionalPositiveInt("feed_forward_length", c.n_ff_exp)
                                      : r.PositiveInt("feed_forward_length"));
  ASSIGN_OR_RETURN(c.n_head, r.PositiveInt("attention.head_count"));
  ASSIGN_OR_RETURN(c.n_head_kv, r.OptionalPositiveInt("attention.head_count_kv", c.n_head));
  ASSIGN_OR_RETURN(c.n_ctx_train, r.OptionalPositiveInt("context_length", 2048));
  if (c.n_embd % c.n_head != 0 && file.Find(r.Key("attention.key_length")) == nullptr) {
    return r.Bad(r.Key("embedding_length"), "= " + std::to_string(c.n_embd) +
                                                " is not divisible by the head count " +
                                                std::to_string(c.n_head));
  }
  ASSIGN_OR_RETURN(c.head_dim, r.OptionalPositiveInt("attention.key_length", c.n_embd / c.n_head));
  ASSIGN_OR_RETURN(c.head_dim_v, r.OptionalPositiveInt("attention.value_length", c.head_dim));
  if (c.head_dim_v != c.head_dim) {
    return UnimplementedError(file.name() + ": key length " + std::to_string(c.head_dim) +
                              " differs from value length " + std::to_string(c.head_dim_v) +
                              ", which is not supported");
  }
  if (c.n_head % c.n_head_kv != 0) {
    return r.Bad(r.Key("attention.head_count_kv"), "= " + std::to_string(c.n_head_kv) +
                                                       " does not divide the head count " +
                                                       std::to_string(c.n_head));
  }
  if (c.n_head / c.n_head_kv > kMaxQueryHeadsPerKvHead) {
    return r.Bad(r.Key("attention.head_count_kv"),
                 "= " + std::to_string(c.n_head_kv) + " gives " +
                     std::to_string(c.n_head / c.n_head_kv) + " query heads per KV head; at most " +
                     std::to_string(kMaxQueryHeadsPerKvHead) + " are supported");
  }
  ASSIGN_OR_RETURN(c.rms_eps, r.OptionalFloat("attention.layer_norm_rms_epsilon", 1e-5f));
  if (!(c.rms_eps > 0.0f && c.rms_eps < 1.0f)) {
    return r.Bad(r.Key("attention.layer_norm_rms_epsilon"), "must be in (0, 1)");
  }

  if (c.arch == ModelArch::kGemma2) RETURN_IF_ERROR(ReadGemma2(file, r, &c));
  if (c.arch == ModelArch::kLlama) RETURN_IF_ERROR(ReadLlamaWindow(file, r, &c));

  // Vocabulary size: the explicit key, else the token list, else the embedding.
  if (auto v = file.GetUint(r.Key("vocab_size")); v.ok()) {
    if (*v == 0 || *v > (1u << 24)) return r.Bad(r.Key("vocab_size"), "is outside 1..2^24");
    c.n_vocab = static_cast<int>(*v);
  } else if (auto toks = file.GetArray("tokenizer.ggml.tokens", gguf::ValueType::kString);
             toks.ok()) {
    c.n_vocab = static_cast<int>((*toks)->elements.size());
  } else if (const gguf::TensorInfo* emb = file.FindTensor("token_embd.weight");
             emb != nullptr && emb->dims.size() == 2 && emb->dims[1] <= (1 << 24)) {
    c.n_vocab = static_cast<int>(emb->dims[1]);
  } else {
    return NotFoundError(file.name() + ": cannot tell the vocabulary size (no " +
                         r.Key("vocab_size") + ", no tokenizer.ggml.tokens)");
  }

  RopeConfig& rope = c.rope;
  ASSIGN_OR_RETURN(rope.n_rot, r.OptionalPositiveInt("rope.dimension_count", c.head_dim));
  if (rope.n_rot > c.head_dim || rope.n_rot % 2 != 0) {
    return r.Bad(r.Key("rope.dimension_count"), "= " + std::to_string(rope.n_rot) +
                                                    " must be even and at most the head size " +
                                                    std::to_string(c.head_dim));
  }
  ASSIGN_OR_RETURN(rope.freq_base, r.OptionalFloat("rope.freq_base", 10000.0f));
  if (!(rope.freq_base > 1.0f)) return r.Bad(r.Key("rope.freq_base"), "must be > 1");

  std::string scaling_type = "none";
  if (const gguf::Value* v = file.Find(r.Key("rope.scaling.type"))) {
    auto s = v->AsString();
    if (!s) return r.Bad(r.Key("rope.scaling.type"), "is not a string");
    scaling_type = std::string(*s);
  }
  // The factor comes from rope.scaling.factor, or the older rope.scale_linear.
  ASSIGN_OR_RETURN(float factor, r.OptionalFloat("rope.scaling.factor", 0.0f));
  if (factor == 0.0f) {
    ASSIGN_OR_RETURN(factor, r.OptionalFloat("rope.scale_linear", 0.0f));
    if (factor != 0.0f && scaling_type == "none") scaling_type = "linear";
  }
  if (factor < 0.0f) return r.Bad(r.Key("rope.scaling.factor"), "is negative");
  if (scaling_type == "none" || factor == 0.0f || factor == 1.0f) {
    rope.scaling = RopeScaling::kNone;
  } else if (scaling_type == "linear") {
    rope.scaling = RopeScaling::kLinear;
    rope.freq_scale = 1.0f / factor;
  } else if (scaling_type == "yarn") {
    rope.scaling = RopeScaling::kYarn;
    rope.freq_scale = 1.0f / factor;
    ASSIGN_OR_RETURN(rope.original_context,
                     r.OptionalPositiveInt("rope.scaling.original_context_length", c.n_ctx_train));
    rope.yarn_ext_factor = 1.0f;
    ASSIGN_OR_RETURN(rope.yarn_attn_factor, r.OptionalFloat("rope.scaling.attn_factor", 1.0f));
    ASSIGN_OR_RETURN(rope.yarn_beta_fast, r.OptionalFloat("rope.scaling.yarn_beta_fast", 32.0f));
    ASSIGN_OR_RETURN(rope.yarn_beta_slow, r.OptionalFloat("rope.scaling.yarn_beta_slow", 1.0f));
  } else {
    return UnimplementedError(file.name() + ": rope scaling type \"" + scaling_type +
                              "\" is not supported (supported: none, linear, yarn)");
  }
  if (c.arch == ModelArch::kGemma3) RETURN_IF_ERROR(ReadGemma3(file, r, &c));
  return c;
}

}  // namespace kvmesh
