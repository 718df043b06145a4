// SentencePiece-style BPE, as llama.cpp's llm_tokenizer_spm.

#include <algorithm>
#include <queue>

#include "common/tokenizer/encoders.h"
#include "common/tokenizer/unicode.h"

namespace kvmesh {
namespace {

// A run of the text; merged-away symbols have length 0.
struct Symbol {
  int prev;
  int next;
  size_t begin;
  size_t length;
};

struct Candidate {
  float score;
  int left;
  int right;
  size_t length;  // of the merged text; a mismatch later means the pair is stale
};

// Highest score first; among equal scores the leftmost pair.
struct LowerPriority {
  bool operator()(const Candidate& a, const Candidate& b) const {
    return a.score < b.score || (a.score == b.score && a.left > b.left);
  }
};

}  // namespace

void EncodeSpm(const Vocab& vocab, std::string_view text, int32_t unk_id,
               std::vector<int32_t>* out) {
  // Symbols are split by lead byte only, like llama.cpp: a malformed lead
  // byte swallows the bytes its length claims.
  std::vector<Symbol> symbols;
  for (size_t pos = 0; pos < text.size();) {
    const size_t length =
        std::min(unicode::Utf8SequenceLength(static_cast<uint8_t>(text[pos])), text.size() - pos);
    const int index = static_cast<int>(symbols.size());
    symbols.push_back({index - 1, pos + length == text.size() ? -1 : index + 1, pos, length});
    pos += length;
  }
  if (symbols.empty()) return;

  std::priority_queue<Candidate, std::vector<Candidate>, LowerPriority> queue;
  auto consider = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    const size_t length = symbols[left].length + symbols[right].length;
    const int32_t id = vocab.Find(text.substr(symbols[left].begin, length));
    if (id != kNoToken) queue.push({vocab.score(id), left, right, length});
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

  // Every merged symbol is a token; an unmerged character may not be and
  // falls back to its bytes.
  for (int i = 0; i != -1; i = symbols[i].next) {
    const std::string_view piece = text.substr(symbols[i].begin, symbols[i].length);
    const int32_t id = vocab.Find(piece);
    if (id != kNoToken) {
      out->push_back(id);
      continue;
    }
    for (char byte : piece) {
      const int32_t byte_id = vocab.ByteFallbackToken(static_cast<uint8_t>(byte));
      if (byte_id != kNoToken) {
        out->push_back(byte_id);
      } else if (unk_id != kNoToken) {
        out->push_back(unk_id);
      }
    }
  }
}

}  // namespace kvmesh
