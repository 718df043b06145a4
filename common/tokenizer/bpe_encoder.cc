// Byte-level BPE, as llama.cpp's llm_tokenizer_bpe.

#include <algorithm>
#include <queue>

#include "common/tokenizer/encoders.h"
#include "common/tokenizer/unicode.h"

namespace kvmesh {
namespace {

struct Symbol {
  int prev;
  int next;
  size_t begin;
  size_t length;  // 0 once merged into its left neighbour
};

struct Candidate {
  int32_t rank;
  int left;
  int right;
  size_t length;  // of the merged text; a mismatch later means the pair is stale
};

// Lowest rank first; among equal ranks the leftmost pair.
struct LowerPriority {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.rank > b.rank || (a.rank == b.rank && a.left > b.left);
  }
};

}  // namespace

BpeEncoder::BpeEncoder(const Vocab& vocab, const TokenizerConfig& config,
                       std::unique_ptr<PreTokenizer> pre_tokenizer)
    : vocab_(vocab),
      ignore_merges_(config.ignore_merges),
      pre_tokenizer_(std::move(pre_tokenizer)) {
  ranks_.reserve(config.merges.size());
  for (size_t rank = 0; rank < config.merges.size(); ++rank) {
    ranks_.try_emplace(config.merges[rank], static_cast<int32_t>(rank));  // first rank wins
  }
}

int32_t BpeEncoder::Rank(std::string_view left, std::string_view right, std::string* key) const {
  key->assign(left);
  key->push_back(' ');
  key->append(right);
  const auto it = ranks_.find(*key);
  return it == ranks_.end() ? -1 : it->second;
}

void BpeEncoder::Encode(std::string_view text, std::vector<int32_t>* out) const {
  std::string word;
  std::string key;
  for (const std::string& raw_word : pre_tokenizer_->Split(text)) {
    word.clear();
    for (char byte : raw_word) word += unicode::ByteToUnicode(static_cast<uint8_t>(byte));
    EncodeWord(word, &key, out);
  }
}

void BpeEncoder::EncodeWord(std::string_view word, std::string* key,
                            std::vector<int32_t>* out) const {
  if (ignore_merges_) {
    const int32_t id = vocab_.Find(word);
    if (id != kNoToken) {
      out->push_back(id);
      return;
    }
  }
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < word.size();) {
    const size_t length =
        std::min(unicode::Utf8SequenceLength(static_cast<uint8_t>(word[pos])), word.size() - pos);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, pos + length == word.size() ? -1 : index + 1, pos, length});
    pos += length;
  }
  if (symbols.empty()) return;

  std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> queue;
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const Symbol& l = symbols[left];
    const Symbol& r = symbols[right];
    const int32_t rank = Rank(word.substr(l.begin, l.length), word.substr(r.begin, r.length), key);
    if (rank >= 0) queue.push({rank, left, right, l.length + r.length});
  };
  for (int i = 1; i < static_cast<int>(symbols.size()); ++i) consider(i - 1, i);

  while (!queue.empty()) {
    const Candidate best = queue.top();
    queue.pop();
    Symbol& left = symbols[best.left];
    Symbol& right = symbols[best.right];
    if (left.length == 0 || right.length == 0 || left.length + right.length != best.length) {
      continue;
    }
    left.length += right.length;
    right.length = 0;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = best.left;
    consider(left.prev, best.left);
    consider(best.left, left.next);
  }

  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = word.substr(symbols[i].begin, symbols[i].length);
    const int32_t id = vocab_.Find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    // llama.cpp's fallback looks each raw byte up as a one-byte token; for a
    // multi-byte spelling that usually finds nothing and the bytes vanish.
    for (size_t k = 0; k < piece.size(); ++k) {
      const int32_t byte_id = vocab_.Find(piece.substr(k, 1));
      if (byte_id != kNoToken) out->push_back(byte_id);
    }
  }
}

}  // namespace kvmesh
