#include "common/grammar/token_mask.h"

#include <algorithm>
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

void Walk(const Grammar& grammar, const TokenVocabulary& vocab, int32_t node, const Stacks& stacks,
          std::vector<Stacks>& scratch, size_t depth, TokenMask& mask) {
  const TokenVocabulary::Node& n = vocab.nodes()[node];
  if (scratch.size() <= depth) scratch.resize(depth + 1);
  for (int32_t c = n.first_child; c < n.first_child + n.num_children; ++c) {
    const TokenVocabulary::Node& child = vocab.nodes()[c];
    Stacks& next = scratch[depth];
    GrammarMatcher::Advance(grammar, stacks, child.byte, &next);
    if (next.empty()) continue;  // no token below starts this way
    for (int32_t t = child.first_token; t < child.first_token + child.num_tokens; ++t) {
      const int32_t id = vocab.token_ids()[t];
      mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
    if (child.num_children > 0) {
      // The level below reuses scratch[depth + 1]; keep ours intact.
      Stacks mine = std::move(next);
      Walk(grammar, vocab, c, mine, scratch, depth + 1, mask);
      scratch[depth] = std::move(mine);
    }
  }
}

}  // namespace

TokenMask ComputeMask(const Grammar& grammar, const TokenVocabulary& vocab, const Stacks& stacks) {
  TokenMask mask((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
  std::vector<Stacks> scratch;
  Walk(grammar, vocab, 0, stacks, scratch, 0, mask);
  if (GrammarMatcher::Accepting(stacks)) {
    for (int32_t id : vocab.end_tokens()) {
      if (id >= 0 && id < vocab.size()) mask[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    }
  }
  return mask;
}

std::string MaskCache::Key(const Stacks& stacks) {
  std::string key;
  for (const Stack& s : stacks) {
    const uint32_t n = static_cast<uint32_t>(s.size());
    key.append(reinterpret_cast<const char*>(&n), sizeof(n));
    key.append(reinterpret_cast<const char*>(s.data()), s.size() * sizeof(int32_t));
  }
  return key;
}

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
