#include "common/tokenizer/tokenizer_config.h"

#include <optional>
#include <unordered_set>

#include "common/gguf/gguf_file.h"
#include "common/tokenizer/pre_tokenizer_names.h"
#include "common/tokenizer/special_token_rules.h"

namespace kvmesh {
namespace {

using gguf::GgufFile;
using gguf::ValueType;

constexpr std::string_view kModelKey = "tokenizer.ggml.model";
constexpr std::string_view kPreKey = "tokenizer.ggml.pre";
constexpr std::string_view kTokensKey = "tokenizer.ggml.tokens";
constexpr std::string_view kScoresKey = "tokenizer.ggml.scores";
constexpr std::string_view kTokenTypeKey = "tokenizer.ggml.token_type";
constexpr std::string_view kMergesKey = "tokenizer.ggml.merges";

constexpr std::string_view kSupportedModels = "llama (SPM), gpt2 (BPE), bert (WPM)";

std::string Quoted(std::string_view s) {
  std::string out = "\"";
  out.append(s);
  out.push_back('"');
  return out;
}

Status KeyError(const GgufFile& file, std::string_view key, const std::string& what) {
  return InvalidArgumentError(file.name() + ": metadata key " + Quoted(key) + " " + what);
}

// Absent keys are not errors here; present keys of the wrong type are.
StatusOr<std::optional<bool>> OptionalBool(const GgufFile& file, std::string_view key) {
  if (file.Find(key) == nullptr) return std::optional<bool>();
  ASSIGN_OR_RETURN(bool value, file.GetBool(key));
  return std::optional<bool>(value);
}

StatusOr<std::string_view> OptionalString(const GgufFile& file, std::string_view key) {
  if (file.Find(key) == nullptr) return std::string_view();
  return file.GetString(key);
}

Status ReadBool(const GgufFile& file, std::string_view key, bool* value) {
  ASSIGN_OR_RETURN(std::optional<bool> read, OptionalBool(file, key));
  if (read) *value = *read;
  return Status::Ok();
}

// A special token id: absent keeps `*id`. llama.cpp writes "none" as -1 or
// UINT32_MAX (stories260K's separator); that keeps `*id` too. Anything else
// must name a token.
Status ReadSpecialId(const GgufFile& file, std::string_view key, int32_t n_vocab, int32_t* id) {
  const gguf::Value* value = file.Find(key);
  if (value == nullptr) return Status::Ok();
  if (!value->is_integer()) {
    return KeyError(file, key,
                    "has type " + std::string(gguf::ValueTypeName(value->type())) +
                        ", expected an integer token id");
  }
  const std::optional<int64_t> signed_value = value->AsInt64();
  if (signed_value && *signed_value < 0) return Status::Ok();
  const uint64_t raw = value->AsUint64().value_or(UINT64_MAX);
  if (raw == UINT32_MAX) return Status::Ok();
  if (raw >= static_cast<uint64_t>(n_vocab)) {
    return KeyError(file, key,
                    "= " + std::to_string(raw) + " is out of range: the vocabulary has " +
                        std::to_string(n_vocab) + " tokens");
  }
  *id = static_cast<int32_t>(raw);
  return Status::Ok();
}

StatusOr<const gguf::Array*> RequiredArray(const GgufFile& file, std::string_view key,
                                           ValueType type) {
  auto array = file.GetArray(key, type);
  if (!array.ok() && array.status().code() == StatusCode::kNotFound) {
    return NotFoundError(file.name() + ": metadata key " + Quoted(key) +
                         " is missing; the file has no tokenizer vocabulary");
  }
  return array;
}

uint32_t AttrOfType(int32_t type) {
  switch (type) {
    case kTokenTypeUnknown:
      return kTokenAttrUnknown;
    case kTokenTypeUnused:
      return kTokenAttrUnused;
    case kTokenTypeNormal:
      return kTokenAttrNormal;
    case kTokenTypeControl:
      return kTokenAttrControl;
    case kTokenTypeUserDefined:
      return kTokenAttrUserDefined;
    case kTokenTypeByte:
      return kTokenAttrByte;
    default:
      return kTokenAttrUndefined;
  }
}

// Defaults llama.cpp's loader sets per model before reading the file's keys.
Status ApplyModelDefaults(const GgufFile& file, std::string_view model_name, std::string_view pre,
                          TokenizerConfig* c) {
  c->escape_whitespaces = true;
  if (model_name == "llama") {
    c->model = TokenizerModel::kSpm;
    c->bos_id = 1;
    c->eos_id = 2;
    c->unk_id = 0;
    c->add_space_prefix = true;
    c->add_bos = true;
  } else if (model_name == "bert") {
    c->model = TokenizerModel::kWpm;
    c->bos_id = 101;
    c->unk_id = 100;
    c->sep_id = 102;
    c->pad_id = 0;
    c->mask_id = 103;
    c->add_sep = true;
    c->clean_spaces = true;
    c->add_bos = true;
  } else if (model_name == "gpt2") {
    c->model = TokenizerModel::kBpe;
    c->bos_id = 11;
    c->eos_id = 11;
    c->escape_whitespaces = false;
    const PreTokenizerTraits* traits = FindPreTokenizer(pre);
    if (traits == nullptr) {
      return KeyError(file, kPreKey,
                      "= " + Quoted(pre) + " names an unsupported pre-tokenizer (supported: " +
                          SupportedPreTokenizerNames() + ")");
    }
    c->clean_spaces = traits->clean_spaces;
    c->ignore_merges = traits->ignore_merges;
    c->add_bos = traits->add_bos;
    if (traits->no_bos) c->bos_id = kNoToken;
  } else {
    return KeyError(file, kModelKey,
                    "= " + Quoted(model_name) + " names an unsupported tokenizer (supported: " +
                        std::string(kSupportedModels) + ")");
  }
  return Status::Ok();
}

Status ReadVocabulary(const GgufFile& file, TokenizerConfig* c) {
  ASSIGN_OR_RETURN(const gguf::Array* tokens, RequiredArray(file, kTokensKey, ValueType::kString));
  const size_t n = tokens->elements.size();
  if (n == 0 || n > static_cast<size_t>(INT32_MAX)) {
    return KeyError(file, kTokensKey, "holds " + std::to_string(n) + " tokens");
  }
  c->tokens.resize(n);
  std::unordered_set<std::string_view> seen;
  seen.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    std::string_view text = *tokens->elements[i].AsString();
    c->tokens[i] = text.empty() ? "[EMPTY_" + std::to_string(i) + "]" : std::string(text);
    if (!seen.insert(c->tokens[i]).second) {
      return KeyError(
          file, kTokensKey,
          "holds the token " + Quoted(c->tokens[i]) + " twice (id " + std::to_string(i) + ")");
    }
  }

  c->scores.assign(n, 0.0f);
  if (const gguf::Value* value = file.Find(kScoresKey)) {
    const gguf::Array* scores = value->AsArray();
    if (scores == nullptr || (scores->element_type != ValueType::kFloat32 &&
                              scores->element_type != ValueType::kInt32)) {
      return KeyError(file, kScoresKey, "must be an array of FLOAT32 or INT32");
    }
    if (scores->elements.size() < n) {
      return KeyError(file, kScoresKey,
                      "has " + std::to_string(scores->elements.size()) + " entries for " +
                          std::to_string(n) + " tokens");
    }
    for (size_t i = 0; i < n; ++i) {
      c->scores[i] = static_cast<float>(*scores->elements[i].AsDouble());
    }
  }

  c->token_types.assign(n, kTokenTypeNormal);
  if (file.Find(kTokenTypeKey) != nullptr) {
    ASSIGN_OR_RETURN(const gguf::Array* types, file.GetArray(kTokenTypeKey, ValueType::kInt32));
    if (types->elements.size() < n) {
      return KeyError(file, kTokenTypeKey,
                      "has " + std::to_string(types->elements.size()) + " entries for " +
                          std::to_string(n) + " tokens");
    }
    for (size_t i = 0; i < n; ++i) {
      c->token_types[i] = static_cast<int32_t>(*types->elements[i].AsInt64());
    }
  }
  c->token_attrs.resize(n);
  for (size_t i = 0; i < n; ++i) c->token_attrs[i] = AttrOfType(c->token_types[i]);

  if (c->model == TokenizerModel::kBpe) {
    ASSIGN_OR_RETURN(const gguf::Array* merges,
                     RequiredArray(file, kMergesKey, ValueType::kString));
    c->merges.reserve(merges->elements.size());
    for (const gguf::Value& merge : merges->elements) c->merges.emplace_back(*merge.AsString());
  }
  return Status::Ok();
}

Status ReadSpecialIds(const GgufFile& file, TokenizerConfig* c) {
  const int32_t n = c->n_vocab();
  struct Key {
    std::string_view key;
    int32_t* id;
  };
  const Key keys[] = {
      {"tokenizer.ggml.bos_token_id", &c->bos_id},
      {"tokenizer.ggml.eos_token_id", &c->eos_id},
      {"tokenizer.ggml.eot_token_id", &c->eot_id},
      {"tokenizer.ggml.eom_token_id", &c->eom_id},
      {"tokenizer.ggml.unknown_token_id", &c->unk_id},
      {"tokenizer.ggml.seperator_token_id", &c->sep_id},  // sic: the GGUF spelling
      {"tokenizer.ggml.padding_token_id", &c->pad_id},
      {"tokenizer.ggml.mask_token_id", &c->mask_id},
      {"tokenizer.ggml.fim_pre_token_id", &c->fim_pre_id},
      {"tokenizer.ggml.fim_suf_token_id", &c->fim_suf_id},
      {"tokenizer.ggml.fim_mid_token_id", &c->fim_mid_id},
      {"tokenizer.ggml.fim_pad_token_id", &c->fim_pad_id},
      {"tokenizer.ggml.fim_rep_token_id", &c->fim_rep_id},
      {"tokenizer.ggml.fim_sep_token_id", &c->fim_sep_id},
      // Older names of the first three FIM ids.
      {"tokenizer.ggml.prefix_token_id", &c->fim_pre_id},
      {"tokenizer.ggml.suffix_token_id", &c->fim_suf_id},
      {"tokenizer.ggml.middle_token_id", &c->fim_mid_id},
  };
  for (const Key& key : keys) {
    if (*key.id >= n) *key.id = kNoToken;  // a default the vocabulary is too small for
    RETURN_IF_ERROR(ReadSpecialId(file, key.key, n, key.id));
  }

  RETURN_IF_ERROR(ReadBool(file, "tokenizer.ggml.add_bos_token", &c->add_bos));
  RETURN_IF_ERROR(ReadBool(file, "tokenizer.ggml.add_eos_token", &c->add_eos));
  RETURN_IF_ERROR(ReadBool(file, "tokenizer.ggml.add_sep_token", &c->add_sep));
  const struct {
    bool add;
    int32_t id;
    std::string_view add_key, id_key;
  } required[] = {
      {c->add_bos, c->bos_id, "add_bos_token", "bos_token_id"},
      {c->add_eos, c->eos_id, "add_eos_token", "eos_token_id"},
      {c->add_sep, c->sep_id, "add_sep_token", "seperator_token_id"},
  };
  for (const auto& r : required) {
    if (r.add && r.id == kNoToken) {
      return InvalidArgumentError(file.name() + ": tokenizer.ggml." + std::string(r.add_key) +
                                  " is true, but tokenizer.ggml." + std::string(r.id_key) +
                                  " names no token");
    }
  }
  return Status::Ok();
}

}  // namespace

std::string_view TokenizerModelName(TokenizerModel model) {
  switch (model) {
    case TokenizerModel::kSpm:
      return "llama";
    case TokenizerModel::kBpe:
      return "gpt2";
    case TokenizerModel::kWpm:
      return "bert";
  }
  return "?";
}

StatusOr<TokenizerConfig> TokenizerConfigFromGguf(const GgufFile& file) {
  TokenizerConfig config;
  ASSIGN_OR_RETURN(std::string_view model_name, file.GetString(kModelKey));
  ASSIGN_OR_RETURN(std::string_view pre, OptionalString(file, kPreKey));
  config.pre = pre.empty() ? "default" : std::string(pre);
  RETURN_IF_ERROR(ApplyModelDefaults(file, model_name, config.pre, &config));
  RETURN_IF_ERROR(ReadBool(file, "tokenizer.ggml.add_space_prefix", &config.add_space_prefix));
  RETURN_IF_ERROR(
      ReadBool(file, "tokenizer.ggml.remove_extra_whitespaces", &config.remove_extra_whitespaces));
  RETURN_IF_ERROR(ReadVocabulary(file, &config));
  RETURN_IF_ERROR(ReadSpecialIds(file, &config));

  RETURN_IF_ERROR(ReadBool(file, "tokenizer.ggml.normalizer.lowercase", &config.lowercase));
  config.strip_accents = config.lowercase;
  RETURN_IF_ERROR(ReadBool(file, "tokenizer.ggml.normalizer.strip_accents", &config.strip_accents));

  ModelNames names;
  ASSIGN_OR_RETURN(names.general_name, OptionalString(file, "general.name"));
  ASSIGN_OR_RETURN(names.general_architecture, OptionalString(file, "general.architecture"));
  names.tokenizer_pre = pre;
  ApplySpecialTokenRules(names, &config);
  return config;
}

Status ValidateTokenizerConfig(const TokenizerConfig& c) {
  const size_t n = c.tokens.size();
  if (n == 0 || n > static_cast<size_t>(INT32_MAX)) {
    return InvalidArgumentError("tokenizer config has " + std::to_string(n) + " tokens");
  }
  const struct {
    std::string_view name;
    size_t size;
  } per_token[] = {{"scores", c.scores.size()},
                   {"token_types", c.token_types.size()},
                   {"token_attrs", c.token_attrs.size()}};
  for (const auto& array : per_token) {
    if (array.size != n) {
      return InvalidArgumentError("tokenizer config: " + std::string(array.name) + " has " +
                                  std::to_string(array.size) + " entries for " + std::to_string(n) +
                                  " tokens");
    }
  }
  const struct {
    std::string_view name;
    int32_t id;
  } ids[] = {
      {"bos_id", c.bos_id},         {"eos_id", c.eos_id},         {"eot_id", c.eot_id},
      {"eom_id", c.eom_id},         {"unk_id", c.unk_id},         {"sep_id", c.sep_id},
      {"pad_id", c.pad_id},         {"mask_id", c.mask_id},       {"fim_pre_id", c.fim_pre_id},
      {"fim_suf_id", c.fim_suf_id}, {"fim_mid_id", c.fim_mid_id}, {"fim_pad_id", c.fim_pad_id},
      {"fim_rep_id", c.fim_rep_id}, {"fim_sep_id", c.fim_sep_id}};
  for (const auto& id : ids) {
    if (id.id < kNoToken || id.id >= static_cast<int64_t>(n)) {
      return InvalidArgumentError("tokenizer config: " + std::string(id.name) + " = " +
                                  std::to_string(id.id) + " is out of range for " +
                                  std::to_string(n) + " tokens");
    }
  }
  for (int32_t id : c.eog_ids) {
    if (id < 0 || id >= static_cast<int64_t>(n)) {
      return InvalidArgumentError("tokenizer config: end-of-generation id " + std::to_string(id) +
                                  " is out of range");
    }
  }
  if ((c.add_bos && c.bos_id == kNoToken) || (c.add_eos && c.eos_id == kNoToken) ||
      (c.add_sep && c.sep_id == kNoToken)) {
    return InvalidArgumentError("tokenizer config adds a special token it has no id for");
  }
  if (c.model != TokenizerModel::kSpm && c.model != TokenizerModel::kBpe &&
      c.model != TokenizerModel::kWpm) {
    return InvalidArgumentError("tokenizer config: unknown model " +
                                std::to_string(static_cast<int32_t>(c.model)) +
                                " (supported: " + std::string(kSupportedModels) + ")");
  }
  if (c.model == TokenizerModel::kBpe && FindPreTokenizer(c.pre) == nullptr) {
    return InvalidArgumentError("tokenizer config: unsupported pre-tokenizer " + Quoted(c.pre) +
                                " (supported: " + SupportedPreTokenizerNames() + ")");
  }
  return Status::Ok();
}

}  // namespace kvmesh
