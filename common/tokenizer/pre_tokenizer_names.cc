#include "common/tokenizer/pre_tokenizer_names.h"

namespace kvmesh {
namespace {

using F = PreTokenizerFamily;

// name, family, clean_spaces, ignore_merges, add_bos, no_bos
constexpr PreTokenizerTraits kPreTokenizers[] = {
    {"default", F::kDefault, true, false, false, false},
    {"llama3", F::kLlama3, true, true, true, false},
    {"llama-v3", F::kLlama3, true, true, true, false},
    {"llama-bpe", F::kLlama3, true, true, true, false},
    {"falcon3", F::kLlama3, true, true, true, false},
    {"falcon-h1", F::kLlama3, true, true, true, false},
    {"pixtral", F::kLlama3, true, true, true, false},
    {"midm-2.0", F::kLlama3, true, true, true, false},
    {"lfm2", F::kLlama3, true, true, true, false},
    {"jina-v5-nano", F::kLlama3, true, true, true, false},
    {"dbrx", F::kLlama3, true, false, false, false},
    {"smaug-bpe", F::kLlama3, true, false, false, false},
    {"glm4", F::kLlama3, true, false, false, true},
    {"chatglm-bpe", F::kLlama3, true, false, false, true},
    {"deepseek-llm", F::kDeepseekLlm, false, false, false, false},
    {"deepseek-coder", F::kDeepseekCoder, false, false, false, false},
    {"falcon", F::kFalcon, true, false, false, false},
    {"mpt", F::kGpt2, true, false, false, false},
    {"olmo", F::kGpt2, true, false, false, false},
    {"jais", F::kGpt2, true, false, false, false},
    {"gpt-2", F::kGpt2, true, false, false, false},
    {"phi-2", F::kGpt2, true, false, false, false},
    {"jina-es", F::kGpt2, true, false, false, false},
    {"jina-de", F::kGpt2, true, false, false, false},
    {"jina-v2-es", F::kGpt2, true, false, false, false},
    {"jina-v2-de", F::kGpt2, true, false, false, false},
    {"gigachat", F::kGpt2, true, false, false, false},
    {"a.x-4.0", F::kGpt2, true, false, false, false},
    {"mellum", F::kGpt2, true, false, false, false},
    {"modern-bert", F::kGpt2, true, false, false, false},
    {"exaone4", F::kGpt2, true, false, false, false},
    {"trillion", F::kGpt2, false, false, false, false},
    {"granite-docling", F::kGpt2, false, false, false, false},
    {"starcoder", F::kStarcoder, true, false, false, false},
    {"refact", F::kStarcoder, true, false, false, false},
    {"codeshell", F::kStarcoder, true, false, false, false},
    {"exaone", F::kStarcoder, true, false, false, false},
    {"minerva-7b", F::kStarcoder, true, false, false, false},
    {"mellum2", F::kStarcoder, true, false, false, false},
    {"command-r", F::kStarcoder, false, false, false, false},
    {"smollm", F::kStarcoder, false, false, false, false},
    {"qwen2", F::kQwen2, false, false, false, false},
    {"deepseek-r1-qwen", F::kQwen2, false, false, false, false},
    {"kormo", F::kQwen2, false, false, false, false},
    {"f2llmv2", F::kQwen2, false, false, false, false},
    {"hunyuan", F::kQwen2, false, false, false, false},
    {"solar-open", F::kQwen2, false, false, false, false},
    {"grok-2", F::kQwen2, false, false, false, false},
    {"stablelm2", F::kQwen2, true, false, false, false},
    {"megrez", F::kQwen2, true, false, false, false},
};

}  // namespace

const PreTokenizerTraits* FindPreTokenizer(std::string_view name) {
  for (const PreTokenizerTraits& traits : kPreTokenizers) {
    if (traits.name == name) return &traits;
  }
  return nullptr;
}

std::string SupportedPreTokenizerNames() {
  std::string names;
  for (const PreTokenizerTraits& traits : kPreTokenizers) {
    if (!names.empty()) names += ", ";
    names += traits.name;
  }
  return names;
}

}  // namespace kvmesh
