#include "common/grammar/token_mask.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <numeric>

namespace kvmesh::grammar {

TokenVocabulary::TokenVocabulary(std::vector<std::string> pieces, std::vector<int32_t> end_tokens)
    : pieces_(std::move(pieces)), end_tokens_(std::move(end_tokens)), is_end_(pieces_.size()) {
  for (int32_t id : end_tokens_) {
    if (id >= 0 && id < size()) is_end_[id] = true;
  }
  std::vector<int32_t> sorted;
  for (int32_t id = 0; id < size(); ++id) {
    if (!pieces_[id].empty() && !is_end_[id]) sorted.push_back(id);
  }
  std::sort(sorted.begin(), sorted.end(),
            [this](int32_t a, int32_t b) { return pieces_[a] < pieces_[b]; });
  nodes_.emplace_back();
  Build(0, sorted, 0);
}

// `sorted` are the tokens under `node`: all share their first `depth` bytes.
void TokenVocabulary::Build(int32_t node, std::span<const int32_t> sorted, size_t depth) {
  size_t i = 0;
  nodes_[node].first_token = static_cast<int32_t>(token_ids_.size());
  while (i < sorted.size() && pieces_[sorted[i]].size() == depth) token_ids_.push_back(sorted[i++]);
  nodes_[node].num_tokens = static_cast<int32_t>(token_ids_.size()) - nodes_[node].first_token;
  // Children: one per distinct next byte, allocated together.
  std::vector<std::pair<size_t, size_t>> groups;
  while (i < sorted.size()) {
    const unsigned char b = static_cast<unsigned char>(pieces_[sorted[i]][depth]);
    size_t j = i;
    while (j < sorted.size() && static_cast<unsigned char>(pieces_[sorted[j]][depth]) == b) ++j;
    groups.emplace_back(i, j);
    i = j;
  }
  const int32_t first = static_cast<int32_t>(nodes_.size());
  nodes_[node].first_child = first;
  nodes_[node].num_children = static_cast<int32_t>(groups.size());
  nodes_.resize(nodes_.size() + groups.size());
  for (size_t g = 0; g < groups.size(); ++g) {
    nodes_[first + g].byte = static_cast<uint8_t>(pieces_[sorted[groups[g].first]][depth]);
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    Build(first + static_cast<int32_t>(g),
          sorted.subspan(groups[g].first, groups[g].second - groups[g].first), depth + 1);
  }
}

namespace {

std::string StacksKey(const Stacks& stacks) {
  std::string key;
  for (const Stack& s : stacks) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(int32_t));
  }
  return key;
}

// The grammar states met while walking the trie from one state, each
// advanced at most once per byte: sibling trie nodes (every ASCII letter
// inside a JSON string, say) lead to the same state, so the walk costs a
// table lookup per node instead of an Advance.
class StateTable {
 public:
  StateTable(const Grammar& grammar, Stacks start) : grammar_(grammar) { Intern(std::move(start)); }

  // The state after `byte` from `state`, or -1 when the grammar refuses it.
  int32_t Next(int32_t state, uint8_t byte) {
    int32_t& next = transitions_[state][byte];
    if (next != kUnknown) return next;
    Stacks to;
    GrammarMatcher::Advance(grammar_, states_[state], byte, &to);
    const int32_t result = to.empty() ? -1 : Intern(std::move(to));
    transitions_[state][byte] = result;  // Intern may have grown the table
    return result;
  }

 private:
  static constexpr int32_t kUnknown = -2;

  int32_t Intern(Stacks stacks) {
    std::string key = StacksKey(stacks);
    auto [it, added] = ids_.emplace(std::move(key), static_cast<int32_t>(states_.size()));
    if (added) {
      states_.push_back(std::move(stacks));
      transitions_.emplace_back();
      transitions_.back().fill(kUnknown);
    }
    return it->second;
  }

  const Grammar& grammar_;
  std::vector<Stacks> states_;
  std::vector<std::array<int32_t, 256>> transitions_;
  std::unordered_map<std::string, int32_t> ids_;
};

void Walk(const TokenVocabulary& vocab, int32_t node, int32_t state, StateTable& table,
          TokenMask& mask) {
  const TokenVocabulary::Node& n = vocab.nodes()[node];
  for (int32_t c = n.first_child; c < n.first_child + n.num_children; ++c) {
    const TokenVocabulary::Node& child = vocab.nodes()[c];
    const int32_t next = table.Next(state, child.byte);
    if (next < 0) continue;  // no token below starts this way
    for (int32_t t = child.first_token; t < child.first_token + child.num_tokens; ++t) {
      const int32_t id = vocab.token_ids()[t];
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
    if (child.num_children > 0) Walk(vocab, c, next, table, mask);
  }
}

}  // namespace

TokenMask ComputeMask(const Grammar& grammar, const TokenVocabulary& vocab, const Stacks& stacks) {
  TokenMask mask((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
  StateTable table(grammar, stacks);
  Walk(vocab, 0, 0, table, mask);
  if (GrammarMatcher::Accepting(stacks)) {
    for (int32_t id : vocab.end_tokens()) {
      if (id >= 0 && id < vocab.size())
        mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
  return mask;
}

std::string MaskCache::Key(const Stacks& stacks) { return StacksKey(stacks); }

std::shared_ptr<const TokenMask> MaskCache::Get(const Grammar& grammar,
                                                const TokenVocabulary& vocab,
                                                const Stacks& stacks) {
  std::string key = Key(stacks);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = index_.find(key); it != index_.end()) {
      lru_.splice(lru_.begin(), lru_, it->second);
      ++hits_;
      return it->second->second;
    }
    ++misses_;
  }
  auto mask = std::make_shared<const TokenMask>(ComputeMask(grammar, vocab, stacks));
  std::lock_guard<std::mutex> lock(mutex_);
  if (index_.count(key) == 0) {
    lru_.emplace_front(key, mask);
    index_[std::move(key)] = lru_.begin();
    if (lru_.size() > capacity_) {
      index_.erase(lru_.back().first);
      lru_.pop_back();
    }
  }
  return mask;
}

size_t MaskCache::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

size_t MaskCache::misses() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return misses_;
}

}  // namespace kvmesh::grammar
