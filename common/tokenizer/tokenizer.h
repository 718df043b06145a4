// Tokenizer: text <-> token ids, identical to llama.cpp's llama_tokenize,
// llama_token_to_piece and llama_detokenize for the same vocabulary.
//
// Built from a TokenizerConfig (see tokenizer_config.h), which it copies and
// owns, so the GGUF file may be closed afterwards. Supports the SPM ("llama"),
// byte-level BPE ("gpt2") and WordPiece ("bert") vocabularies.
//
// Immutable after Create(): every method is const and may be called from any
// number of threads at once.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "common/tokenizer/tokenizer_config.h"

namespace kvmesh {

class BpeEncoder;
class Vocab;

class Tokenizer {
 public:
  // Validates the config (InvalidArgument on inconsistencies, unsupported
  // model or pre-tokenizer, duplicate token texts).
  static StatusOr<std::unique_ptr<Tokenizer>> Create(TokenizerConfig config);
  ~Tokenizer();
  Tokenizer(const Tokenizer&) = delete;
  Tokenizer& operator=(const Tokenizer&) = delete;

  // llama_tokenize. `add_special` adds BOS/EOS (and WordPiece's SEP) as the
  // config says. With `parse_special` false the text of control tokens
  // ("<|im_end|>") is plain text; user-defined tokens are matched either way.
  std::vector<int32_t> Encode(std::string_view text, bool add_special, bool parse_special) const;

  // llama_token_to_piece: the raw bytes a token stands for (SPM "▁" -> " ",
  // "<0x0A>" -> "\n", byte-level BPE decoded). Control and unknown tokens are
  // empty unless `render_special`. Empty for ids outside the vocabulary.
  std::string TokenToPiece(int32_t id, bool render_special) const;

  // llama_detokenize. Pieces are concatenated; when the vocabulary adds a
  // space prefix the first piece loses one leading space. `remove_special`
  // drops a leading BOS / trailing EOS the config would add. BPE vocabularies
  // with clean_spaces then tidy " ," " 's" and the like. The result is raw
  // bytes (a split multi-byte character stays split).
  std::string Decode(std::span<const int32_t> ids, bool remove_special = false,
                     bool render_special = false) const;

  int32_t n_vocab() const { return config_.n_vocab(); }
  int32_t bos_id() const { return config_.bos_id; }
  int32_t eos_id() const { return config_.eos_id; }
  int32_t eot_id() const { return config_.eot_id; }
  int32_t unk_id() const { return config_.unk_id; }
  int32_t pad_id() const { return config_.pad_id; }
  // llama.cpp's newline token: the byte token for '\n' (SPM), the encoding of
  // "\n" (BPE) or the pad token (WordPiece).
  int32_t linefeed_id() const { return linefeed_id_; }

  bool IsEndOfGeneration(int32_t id) const;
  bool IsControl(int32_t id) const;
  // TokenAttr bits; 0 for ids outside the vocabulary.
  uint32_t TokenAttributes(int32_t id) const;
  // The vocabulary's spelling of a token ("▁Hello", "Ġworld"); empty outside.
  std::string_view TokenText(int32_t id) const;

  const TokenizerConfig& config() const { return config_; }

 private:
  explicit Tokenizer(TokenizerConfig config);
  Status Init();

  struct Fragment;
  std::vector<Fragment> SplitOnSpecialTokens(std::string_view text, bool parse_special) const;
  void EncodeText(std::string_view text, bool prefix_space, std::vector<int32_t>* out) const;
  std::string ComputePiece(int32_t id) const;
  bool InVocab(int32_t id) const { return id >= 0 && id < config_.n_vocab(); }

  const TokenizerConfig config_;
  std::unique_ptr<Vocab> vocab_;
  std::unique_ptr<BpeEncoder> bpe_;
  std::vector<int32_t> special_tokens_;  // matched in text, longest first
  std::vector<std::string> pieces_;      // TokenToPiece(id, render_special=true)
  std::vector<bool> is_eog_;
  int32_t linefeed_id_ = kNoToken;
};

}  // namespace kvmesh
