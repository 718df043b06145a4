// Token masks: which tokens of a vocabulary a grammar state allows next.
//
// TokenVocabulary holds every token's bytes as the output shows them
// (TokenToPiece without control tokens, plus any control tokens the request
// shows, such as a tool-call marker) in a trie. ComputeMask walks the trie
// from a grammar state, advancing the state byte by byte and cutting off a
// whole subtree at the first byte the grammar refuses, so shared prefixes
// are matched once. End-of-generation tokens are allowed exactly when the
// state accepts.
//
// MaskCache remembers masks by grammar state: a generation revisits the
// same states (inside a JSON string every character leaves the state as it
// was), and requests with the same grammar share the cache.
//
// TokenVocabulary is immutable (share it); MaskCache is thread-safe.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/grammar/grammar_matcher.h"

namespace kvmesh::grammar {

class TokenVocabulary {
 public:
  // `pieces[id]` is token id's text as shown (empty: the token never
  // matches, e.g. a control token); `end_tokens` end a generation.
  TokenVocabulary(std::vector<std::string> pieces, std::vector<int32_t> end_tokens);

  int32_t size() const { return static_cast<int32_t>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[id]; }
  const std::vector<int32_t>& end_tokens() const { return end_tokens_; }
  bool is_end(int32_t id) const { return is_end_[id]; }

  struct Node {
    uint8_t byte = 0;
    int32_t first_child = 0;
    int32_t num_children = 0;
    int32_t first_token = 0;  // into token_ids(): tokens whose bytes end here
    int32_t num_tokens = 0;
  };
  const std::vector<Node>& nodes() const { return nodes_; }  // [0] is the root
  const std::vector<int32_t>& token_ids() const { return token_ids_; }

 private:
  void Build(int32_t node, std::span<const int32_t> sorted, size_t depth);

  std::vector<std::string> pieces_;
  std::vector<int32_t> end_tokens_;
  std::vector<bool> is_end_;
  std::vector<Node> nodes_;
  std::vector<int32_t> token_ids_;
};

// One bit per token.
using TokenMask = std::vector<uint64_t>;

inline bool MaskAllows(const TokenMask& mask, int32_t id) {
  return (mask[static_cast<size_t>(id) >> 6] >> (id & 63)) & 1;
}

// The tokens `stacks` allows next.
TokenMask ComputeMask(const Grammar& grammar, const TokenVocabulary& vocab, const Stacks& stacks);

class MaskCache {
 public:
  explicit MaskCache(size_t capacity = 512) : capacity_(capacity) {}

  // The cached mask for `stacks`, computing it on a miss.
  std::shared_ptr<const TokenMask> Get(const Grammar& grammar, const TokenVocabulary& vocab,
                                       const Stacks& stacks);

  size_t hits() const;
  size_t misses() const;

 private:
  static std::string Key(const Stacks& stacks);

  const size_t capacity_;
  mutable std::mutex mutex_;
  // LRU: front is the most recent; guarded by mutex_.
  std::list<std::pair<std::string, std::shared_ptr<const TokenMask>>> lru_;
  std::unordered_map<std::string, decltype(lru_)::iterator> index_;
  size_t hits_ = 0, misses_ = 0;
};

}  // namespace kvmesh::grammar
