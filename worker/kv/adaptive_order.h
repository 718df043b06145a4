// AdaptiveOrder: which of a KV cache's unused blocks to evict, least
// recently used first but with a head start, learned from the traffic, for
// blocks a later request reused.
//
// The cache keeps the blocks no request uses in two least-recently-used
// lists: blocks never reused since they were stored, and blocks a later
// request found and reused. Each block is stamped when it joins its list,
// on a clock that counts the distinct blocks the cache has stored (its
// turnover). The victim is the older of the two lists' oldest blocks,
// where a reused block counts as `head_start` blocks younger than it is.
// With a head start of 0 this is least recently used, except that blocks
// freed between two stores tie and the never-reused ones go first.
//
// The head start moves with what requests come back for. The class
// remembers the keys of recently evicted blocks of each kind (as many as
// the cache holds). A block stored again while remembered was evicted too
// early: a reused one raises the head start, a never-reused one lowers it,
// each by the ratio of the other memory's size to its own (at least one
// block; the rule of Megiddo and Modha's adaptive replacement cache, ARC,
// 2003), between 0 and the cache's size, so that a reused block outlasts a
// never-reused one by at most one turnover of the whole cache. ARC moves a
// split of the cache between the two kinds; moving a recency head start
// instead never evicts a small list of hot reused blocks (a tenant's tools
// prompt) ahead of colder ones, which a split did (docs/kv-cache.md,
// "Eviction"). Blocks in use are never evicted, so only the unused ones
// are ordered.
//
// Why: least-recently-used eviction keeps a session's newest blocks, which
// its next turn needs, but under pressure it also evicts a context many
// users share to keep the blocks of a conversation that has ended. The head
// start keeps shared contexts where those are what comes back, and falls to
// plain recency where sessions' newest blocks are (docs/kv-cache.md,
// "Eviction").
//
// Not thread-safe; the cache that owns it serializes calls.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace kvmesh {

// How a KV cache picks the unused block to evict.
enum class KvEviction {
  kLru,       // least recently used first
  kAdaptive,  // least recently used, with a learned head start for reused blocks
};

// "lru" or "adaptive" (the worker's --kv-eviction); nullopt for anything else.
inline std::optional<KvEviction> ParseKvEviction(std::string_view name) {
  if (name == "lru") return KvEviction::kLru;
  if (name == "adaptive") return KvEviction::kAdaptive;
  return std::nullopt;
}

template <typename Key, typename Hasher = std::hash<Key>>
class AdaptiveOrder {
 public:
  explicit AdaptiveOrder(int64_t capacity_blocks)
      : capacity_(std::max<int64_t>(1, capacity_blocks)) {}

  // A block stored (a hash's first copy in the cache): the clock moves on.
  void Tick() { ++clock_; }
  // The stamp for a block joining an unused list now.
  uint64_t Now() const { return clock_; }

  // A block stored (computed or copied in). Returns whether it counts as
  // reused: it does when it was evicted lately, which moves the head start
  // towards the kind it was evicted as.
  bool Stored(const Key& key) {
    auto it = ghosts_.find(key);
    if (it == ghosts_.end()) return false;
    const bool reused = it->second.reused;
    // ARC's step: the other memory's size over this one's, the returning
    // key still counted.
    const int64_t step = std::max<int64_t>(1, ghost_count_[!reused] / ghost_count_[reused]);
    ghosts_.erase(it);
    --ghost_count_[reused];
    head_start_ =
        reused ? std::min(capacity_, head_start_ + step) : std::max<int64_t>(0, head_start_ - step);
    return true;
  }

  // A block evicted, reused or not.
  void Evicted(const Key& key, bool reused) {
    const uint64_t seq = next_seq_++;
    auto [it, added] = ghosts_.try_emplace(key, Ghost{reused, seq});
    if (!added) {
      --ghost_count_[it->second.reused];
      it->second = Ghost{reused, seq};
    }
    ++ghost_count_[reused];
    fifo_[reused].push_back({key, seq});
    Trim(reused);
  }

  // Whether to evict the oldest never-reused block (stamped `never_reused`)
  // rather than the oldest reused one (`reused`); nullopt where a list is
  // empty.
  bool TakeNeverReused(std::optional<uint64_t> never_reused, std::optional<uint64_t> reused) const {
    if (!never_reused) return false;
    if (!reused) return true;
    return *never_reused <= *reused + static_cast<uint64_t>(head_start_);
  }

  // The head start of reused blocks, in blocks stored.
  int64_t head_start() const { return head_start_; }
  // Evicted keys of a kind remembered (at most the cache's size).
  int64_t remembered(bool reused) const { return ghost_count_[reused]; }

 private:
  struct Ghost {
    bool reused = false;
    uint64_t seq = 0;
  };
  // Forgets the oldest keys of a kind beyond the cache's size, and keys
  // that left or changed kind (stale entries of the queue).
  void Trim(bool reused) {
    auto& fifo = fifo_[reused];
    while (!fifo.empty()) {
      const auto& [key, seq] = fifo.front();
      auto it = ghosts_.find(key);
      const bool live = it != ghosts_.end() && it->second.seq == seq;
      if (live && ghost_count_[reused] <= capacity_ &&
          fifo.size() <= 2 * static_cast<size_t>(capacity_)) {
        break;
      }
      if (live) {
        ghosts_.erase(it);
        --ghost_count_[reused];
      }
      fifo.pop_front();
    }
  }

  int64_t capacity_;
  int64_t head_start_ = 0;
  uint64_t clock_ = 0;
  std::unordered_map<Key, Ghost, Hasher> ghosts_;
  std::deque<std::pair<Key, uint64_t>> fifo_[2];
  int64_t ghost_count_[2] = {};
  uint64_t next_seq_ = 0;
};

}  // namespace kvmesh
