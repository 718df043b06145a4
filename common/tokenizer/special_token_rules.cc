#include "common/tokenizer/special_token_rules.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <set>
#include <span>
#include <string>
#include <unordered_map>

namespace kvmesh {
namespace {

using Names = std::span<const std::string_view>;

// DeepSeek's markers are spelled with U+FF5C (fullwidth bar) and U+2581.
constexpr std::string_view kEndOfTurnTexts[] = {
    "<|eot_id|>",        "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
    "<|end_of_text|>",   "<EOT>",      "_<EOT>",  "[EOT]",         "<｜end▁of▁sentence｜>",
    "<end_of_utterance>"};
constexpr std::string_view kEndOfMessageTexts[] = {"<|eom_id|>"};
constexpr std::string_view kFimPrefixTexts[] = {"<|fim_prefix|>",  "<fim-prefix>", "<fim_prefix>",
                                                "<｜fim▁begin｜>", "<PRE>",        "▁<PRE>",
                                                "<|code_prefix|>", "<|prefix|>"};
constexpr std::string_view kFimSuffixTexts[] = {"<|fim_suffix|>",  "<fim-suffix>", "<fim_suffix>",
                                                "<｜fim▁hole｜>",  "<SUF>",        "▁<SUF>",
                                                "<|code_suffix|>", "<|suffix|>"};
constexpr std::string_view kFimMiddleTexts[] = {"<|fim_middle|>",  "<fim-middle>", "<fim_middle>",
                                                "<｜fim▁end｜>",   "<MID>",        "▁<MID>",
                                                "<|code_middle|>", "<|middle|>"};
constexpr std::string_view kFimPadTexts[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>",
                                             "[PAD]"};
constexpr std::string_view kFimRepoTexts[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>",
                                              "<REPO>", "<reponame>"};
constexpr std::string_view kFimSeparatorTexts[] = {"<|file_sep|>"};
constexpr std::string_view kEndOfGenerationTexts[] = {"<|eot_id|>",
                                                      "<|im_end|>",
                                                      "<|end|>",
                                                      "<|return|>",
                                                      "<|call|>",
                                                      "<|flush|>",
                                                      "<|calls|>",
                                                      "<end_of_turn>",
                                                      "<|endoftext|>",
                                                      "</s>",
                                                      "<|eom_id|>",
                                                      "<EOT>",
                                                      "_<EOT>",
                                                      "[EOT]",
                                                      "[EOS]",
                                                      "<|end_of_text|>",
                                                      "<end_of_utterance>",
                                                      "<eos>",
                                                      "<turn|>",
                                                      "<|tool_response>",
                                                      "<｜end▁of▁sentence｜>",
                                                      "[e~["};
// gpt-oss spells its channel markers as text; they must always render.
constexpr std::string_view kAlwaysRenderedTexts[] = {"<|channel|>", "<|message|>", "<|start|>",
                                                     "<|constrain|>"};

bool OneOf(std::string_view text, Names names) {
  return std::find(names.begin(), names.end(), text) != names.end();
}

bool ContainsAny(std::string_view text, std::initializer_list<std::string_view> needles) {
  for (std::string_view needle : needles) {
    if (text.find(needle) != std::string_view::npos) return true;
  }
  return false;
}

constexpr uint32_t kSpecialBits = kTokenAttrControl | kTokenAttrUserDefined | kTokenAttrUnknown;

}  // namespace

void ApplySpecialTokenRules(const ModelNames& names, TokenizerConfig* config) {
  std::vector<uint32_t>& attrs = config->token_attrs;
  const std::vector<std::string>& tokens = config->tokens;
  const int32_t n_vocab = config->n_vocab();

  // llama.cpp visits candidates in the iteration order of its
  // std::unordered_map<std::string, token id>, filled in id order; where two
  // candidates compete for one role the first visited wins. The same map,
  // built the same way, visits them in the same order.
  std::unordered_map<std::string, int32_t> by_text;
  for (int32_t id = 0; id < n_vocab; ++id) by_text.emplace(tokens[id], id);
  auto find = [&](std::string_view text) {
    const auto it = by_text.find(std::string(text));
    return it == by_text.end() ? kNoToken : it->second;
  };

  struct Role {
    int32_t* id;
    Names texts;
  };
  const Role roles[] = {
      {&config->eot_id, kEndOfTurnTexts},     {&config->eom_id, kEndOfMessageTexts},
      {&config->fim_pre_id, kFimPrefixTexts}, {&config->fim_suf_id, kFimSuffixTexts},
      {&config->fim_mid_id, kFimMiddleTexts}, {&config->fim_pad_id, kFimPadTexts},
      {&config->fim_rep_id, kFimRepoTexts},   {&config->fim_sep_id, kFimSeparatorTexts},
  };
  for (const auto& [text, id] : by_text) {
    for (const Role& role : roles) {
      if (*role.id == kNoToken && OneOf(text, role.texts)) {
        *role.id = id;
        attrs[id] |= kTokenAttrControl;
      }
    }
  }

  for (const auto& [text, id] : by_text) {
    if ((attrs[id] & kTokenAttrControl) && text.find("unused") != std::string::npos) {
      attrs[id] |= kTokenAttrUnused;
    }
  }

  std::set<int32_t> eog;
  for (int32_t id : {config->fim_pad_id, config->fim_rep_id, config->fim_sep_id}) {
    if (id != kNoToken) eog.insert(id);
  }
  for (const auto& [text, id] : by_text) {
    if (OneOf(text, kEndOfGenerationTexts)) {
      eog.insert(id);
      attrs[id] |= kTokenAttrControl;
    }
  }
  for (const auto& [text, id] : by_text) {
    if (OneOf(text, kAlwaysRenderedTexts)) attrs[id] = kTokenAttrUserDefined;
  }
  for (int32_t id : {config->eos_id, config->eot_id, config->eom_id}) {
    if (id != kNoToken) eog.insert(id);
  }

  // o200k_harmony and solar-open end turns with <|return|>/<|call|> or
  // <|calls|>/<|flush|>; their <|end|> separates messages and must not stop
  // generation.
  {
    bool has_return = false, has_call = false, has_flush = false;
    int32_t end_id = kNoToken;
    for (int32_t id : eog) {
      const std::string& text = tokens[id];
      has_return |= text == "<|return|>";
      has_call |= text == "<|call|>" || text == "<|calls|>";
      has_flush |= text == "<|flush|>";
      if (text == "<|end|>") end_id = id;
    }
    if (end_id != kNoToken && has_call && (has_return || has_flush)) {
      eog.erase(end_id);
      attrs[end_id] = kTokenAttrUserDefined;
    }
  }
  // Gemma 4 and PaddleOCR use </s> as ordinary text next to <|tool_response>.
  {
    int32_t s_id = kNoToken;
    bool has_tool_response = false;
    for (int32_t id : eog) {
      has_tool_response |= tokens[id] == "<|tool_response>";
      if (tokens[id] == "</s>") s_id = id;
    }
    if (has_tool_response && s_id != kNoToken) {
      eog.erase(s_id);
      attrs[s_id] = kTokenAttrNormal;
    }
  }
  config->eog_ids.assign(eog.begin(), eog.end());

  // Attributes llama.cpp sets by model name.
  std::string model_name(names.general_name);
  for (char& c : model_name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto set_bit = [&](std::string_view text, uint32_t bit, bool on) {
    const int32_t id = find(text);
    if (id == kNoToken) return;
    attrs[id] = on ? (attrs[id] | bit) : (attrs[id] & ~bit);
  };
  if (ContainsAny(names.tokenizer_pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      ContainsAny(names.general_architecture, {"nomic-bert-moe", "jina-bert-v3"})) {
    set_bit("<mask>", kTokenAttrLstrip, true);
  } else if (ContainsAny(model_name, {"phi-3", "phi3"})) {
    for (int32_t id = 0; id < n_vocab; ++id) {
      if (attrs[id] & kSpecialBits) attrs[id] |= kTokenAttrRstrip;
    }
    set_bit("</s>", kTokenAttrRstrip, true);
    for (std::string_view text : {"<unk>", "<s>", "<|endoftext|>"}) {
      set_bit(text, kTokenAttrRstrip, false);
    }
  } else if (ContainsAny(model_name, {"modern-bert"})) {
    set_bit("[MASK]", kTokenAttrLstrip, true);
  }
}

}  // namespace kvmesh
