// The `tokenizer.ggml.pre` names of byte-level BPE vocabularies kvmesh
// understands, and what each one implies, as in llama.cpp's vocabulary loader:
// the split rules (the family) and the defaults it sets before the file's own
// tokenizer.ggml.add_* keys are read.
#pragma once

#include <string>
#include <string_view>

namespace kvmesh {

enum class PreTokenizerFamily {
  kDefault,        // llama.cpp's fallback for BPE files without a known pre-tokenizer
  kGpt2,           // GPT-2's regex
  kLlama3,         // Llama 3's regex: up to 3 digits per word
  kQwen2,          // Llama 3's regex with one digit per word
  kStarcoder,      // one digit per word, then GPT-2's regex
  kFalcon,         // punctuation runs, GPT-2's regex, digit triples
  kDeepseekLlm,    // Deepseek LLM's six regexes
  kDeepseekCoder,  // Deepseek Coder's five regexes
};

struct PreTokenizerTraits {
  std::string_view name;
  PreTokenizerFamily family;
  bool clean_spaces;   // llama_detokenize's clean-up of " ," " 's" etc.
  bool ignore_merges;  // a word that is a whole token skips the merges
  bool add_bos;        // default for tokenizer.ggml.add_bos_token
  bool no_bos;         // the vocabulary has no BOS token unless the file names one
};

// nullptr for names kvmesh does not support.
const PreTokenizerTraits* FindPreTokenizer(std::string_view name);
// All supported names, comma separated.
std::string SupportedPreTokenizerNames();

}  // namespace kvmesh
