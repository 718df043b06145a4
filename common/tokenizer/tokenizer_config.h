// TokenizerConfig: everything needed to tokenize text exactly as llama.cpp
// does for one model, resolved from the model's GGUF metadata.
//
// Resolved means llama.cpp's loader has already been applied: defaults filled
// in for absent keys (special ids, add_bos/add_eos, add_space_prefix...),
// token attributes derived from token types and from llama.cpp's name-based
// rules (end-of-turn and fill-in-the-middle tokens found by their text,
// "unused" control tokens, Phi-3's right-stripping specials...), and the
// end-of-generation set computed. A Tokenizer built from the config needs no
// further metadata, so a worker can send the config to a router (over gRPC)
// and both tokenize identically without the model file.
//
// A plain value type: copyable, movable, no references into the GGUF file.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kvmesh {

namespace gguf {
class GgufFile;
}

inline constexpr int32_t kNoToken = -1;

// Per-token attribute bits; the values of llama.cpp's llama_token_attr.
enum TokenAttr : uint32_t {
  kTokenAttrUndefined = 0,
  kTokenAttrUnknown = 1 << 0,
  kTokenAttrUnused = 1 << 1,
  kTokenAttrNormal = 1 << 2,
  kTokenAttrControl = 1 << 3,  // special text: <s>, <|im_end|>...
  kTokenAttrUserDefined = 1 << 4,
  kTokenAttrByte = 1 << 5,  // <0x0A>-style byte fallback tokens
  kTokenAttrNormalized = 1 << 6,
  kTokenAttrLstrip = 1 << 7,  // eats the whitespace before it in the text
  kTokenAttrRstrip = 1 << 8,  // eats the whitespace after it in the text
  kTokenAttrSingleWord = 1 << 9,
};

// tokenizer.ggml.token_type values (gguf's TokenType).
enum TokenType : int32_t {
  kTokenTypeUndefined = 0,
  kTokenTypeNormal = 1,
  kTokenTypeUnknown = 2,
  kTokenTypeControl = 3,
  kTokenTypeUserDefined = 4,
  kTokenTypeUnused = 5,
  kTokenTypeByte = 6,
};

// tokenizer.ggml.model.
enum class TokenizerModel : int32_t {
  kSpm = 0,  // "llama": SentencePiece BPE over scores, byte fallback
  kBpe = 1,  // "gpt2": byte-level BPE over merge ranks
  kWpm = 2,  // "bert": WordPiece
};

struct TokenizerConfig {
  TokenizerModel model = TokenizerModel::kSpm;
  // tokenizer.ggml.pre; "default" when absent. Only BPE uses it.
  std::string pre = "default";

  // One entry per token id. Empty token strings are replaced by
  // "[EMPTY_<id>]", as llama.cpp does.
  std::vector<std::string> tokens;
  std::vector<float> scores;          // 0 when the file has none
  std::vector<int32_t> token_types;   // TokenType; kTokenTypeNormal when absent
  std::vector<uint32_t> token_attrs;  // TokenAttr bits, resolved
  std::vector<std::string> merges;    // BPE only: "left right", rank = index

  int32_t bos_id = kNoToken;
  int32_t eos_id = kNoToken;
  int32_t eot_id = kNoToken;
  int32_t eom_id = kNoToken;
  int32_t unk_id = kNoToken;
  int32_t sep_id = kNoToken;
  int32_t pad_id = kNoToken;
  int32_t mask_id = kNoToken;
  int32_t fim_pre_id = kNoToken;
  int32_t fim_suf_id = kNoToken;
  int32_t fim_mid_id = kNoToken;
  int32_t fim_pad_id = kNoToken;
  int32_t fim_rep_id = kNoToken;
  int32_t fim_sep_id = kNoToken;
  std::vector<int32_t> eog_ids;  // end-of-generation tokens, ascending

  bool add_bos = false;                   // Encode(add_special=true) prepends bos_id
  bool add_eos = false;                   // ... and appends eos_id
  bool add_sep = false;                   // WPM: ... and appends sep_id
  bool add_space_prefix = false;          // SPM: text starts with a space
  bool remove_extra_whitespaces = false;  // read and carried; llama.cpp's SPM ignores it
  bool clean_spaces = false;              // Decode() removes " ," " 's"... spaces
  bool ignore_merges = false;             // BPE: a word that is a token skips merging
  bool escape_whitespaces = false;        // spaces are spelled U+2581 in the vocabulary
  bool lowercase = true;                  // WPM normalizer
  bool strip_accents = true;              // WPM normalizer

  int32_t n_vocab() const { return static_cast<int32_t>(tokens.size()); }
};

// Reads and resolves the tokenizer of a GGUF file. Errors name the file and
// the key: missing tokens, arrays of the wrong type, scores/types arrays of
// the wrong length, special token ids out of range, and unsupported
// tokenizer models or pre-tokenizers (listing the supported ones).
StatusOr<TokenizerConfig> TokenizerConfigFromGguf(const gguf::GgufFile& file);

// Checks a config's internal consistency (array lengths, id ranges, names),
// e.g. after receiving one from another process.
Status ValidateTokenizerConfig(const TokenizerConfig& config);

// "llama", "gpt2" or "bert".
std::string_view TokenizerModelName(TokenizerModel model);

}  // namespace kvmesh
