// The three subword algorithms behind Tokenizer::Encode, each applied to one
// stretch of plain text (special tokens were split off before):
//
//   SPM (tokenizer.ggml.model "llama"): SentencePiece-style BPE. Start from
//     UTF-8 characters; repeatedly merge the adjacent pair whose union is the
//     highest-scoring token (ties: leftmost); characters no token covers fall
//     back to <0xAB> byte tokens.
//   BPE ("gpt2"): byte-level BPE. Pre-tokenize into words, spell each byte as
//     a printable code point, then merge by the lowest merge rank (ties:
//     leftmost) within each word.
//   WPM ("bert"): WordPiece. Normalize, split into words, and take the
//     longest known prefix repeatedly; a word with an unknown part becomes
//     [UNK].
//
// All three follow llama.cpp's llm_tokenizer_{spm,bpe,wpm} step for step so
// that ties and odd inputs produce the same ids. Encoders are immutable and
// safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/tokenizer_config.h"
#include "common/tokenizer/vocab.h"

namespace kvmesh {

// `text` has its spaces already spelled U+2581. Bytes with neither a byte
// token nor a single-byte token become `unk_id` (skipped when kNoToken).
void EncodeSpm(const Vocab& vocab, std::string_view text, int32_t unk_id,
               std::vector<int32_t>* out);

class BpeEncoder {
 public:
  // `config` must outlive the encoder (ranks point into config.merges).
  BpeEncoder(const Vocab& vocab, const TokenizerConfig& config,
             std::unique_ptr<PreTokenizer> pre_tokenizer);
  BpeEncoder(const BpeEncoder&) = delete;
  BpeEncoder& operator=(const BpeEncoder&) = delete;

  void Encode(std::string_view text, std::vector<int32_t>* out) const;

 private:
  // Merge rank of the pair, or -1. `key` is scratch space.
  int32_t Rank(std::string_view left, std::string_view right, std::string* key) const;
  void EncodeWord(std::string_view word, std::string* key, std::vector<int32_t>* out) const;

  const Vocab& vocab_;
  const bool ignore_merges_;
  std::unique_ptr<PreTokenizer> pre_tokenizer_;
  std::unordered_map<std::string_view, int32_t> ranks_;  // "left right" -> rank
};

// Uses config.lowercase, config.strip_accents and config.unk_id.
void EncodeWpm(const Vocab& vocab, const TokenizerConfig& config, std::string_view text,
               std::vector<int32_t>* out);

}  // namespace kvmesh
