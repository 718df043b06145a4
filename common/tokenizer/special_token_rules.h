// llama.cpp's text-based special-token rules, applied while resolving a
// TokenizerConfig.
//
// Many GGUF files do not say which tokens end a turn or mark fill-in-the-
// middle, so llama.cpp recognises them by their text ("<|eot_id|>",
// "<|im_end|>", "<fim_prefix>"...), forces them to be control tokens, and
// derives the end-of-generation set from them. A few models get per-token
// strip attributes by name (Phi-3's specials eat the whitespace after them).
// Token ids and stop conditions depend on all of this, so it is reproduced
// rule for rule, including the order in which candidates are visited.
#pragma once

#include <string_view>

#include "common/tokenizer/tokenizer_config.h"

namespace kvmesh {

struct ModelNames {
  std::string_view general_name;          // general.name ("" when absent)
  std::string_view general_architecture;  // general.architecture
  std::string_view tokenizer_pre;         // tokenizer.ggml.pre as written ("" when absent)
};

// Expects tokens, token_attrs (from the token types) and the special ids read
// from the file; fills in eot/eom/fim ids, eog_ids and adjusts token_attrs.
void ApplySpecialTokenRules(const ModelNames& names, TokenizerConfig* config);

}  // namespace kvmesh
