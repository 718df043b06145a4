// Vocab: read-only lookups over a TokenizerConfig's token list, shared by the
// SPM, BPE and WordPiece encoders.
//
// Holds views into the config it was built from, which must outlive it.
// Immutable after construction; safe to use from many threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "common/tokenizer/tokenizer_config.h"

namespace kvmesh {

class Vocab {
 public:
  // Token texts must be unique (ValidateTokenizerConfig-clean configs are).
  explicit Vocab(const TokenizerConfig& config);
  Vocab(const Vocab&) = delete;
  Vocab& operator=(const Vocab&) = delete;

  int32_t size() const { return config_.n_vocab(); }
  const std::string& text(int32_t id) const { return config_.tokens[id]; }
  float score(int32_t id) const { return config_.scores[id]; }
  uint32_t attrs(int32_t id) const { return config_.token_attrs[id]; }
  // Longest token, in bytes.
  size_t max_token_length() const { return max_token_length_; }

  // The id of the token spelled `text`, or kNoToken.
  int32_t Find(std::string_view text) const {
    const auto it = ids_.find(text);
    return it == ids_.end() ? kNoToken : it->second;
  }

  // SentencePiece byte fallback: the "<0xAB>" token for `byte`, else a token
  // spelled as that single byte, else kNoToken.
  int32_t ByteFallbackToken(uint8_t byte) const;

 private:
  const TokenizerConfig& config_;
  std::unordered_map<std::string_view, int32_t> ids_;
  size_t max_token_length_ = 0;
};

}  // namespace kvmesh
