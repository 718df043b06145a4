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
#include <functional>
#include <optional>
#include <string_view>
#include <utility>

#include "worker/kv/evicted_keys.h"

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
    const bool reused = ghosts_[1].Contains(key);
    if (!reused && !ghosts_[0].Contains(key)) return false;
    // ARC's step: the other memory's size over this one's, the returning
    // key still counted.
    const int64_t step = std::max<int64_t>(1, ghosts_[!reused].size() / ghosts_[reused].size());
    ghosts_[reused].Erase(key);
    head_start_ =
        reused ? std::min(capacity_, head_start_ + step) : std::max<int64_t>(0, head_start_ - step);
    return true;
  }

  // A block evicted, reused or not.
  void Evicted(const Key& key, bool reused) {
    ghosts_[!reused].Erase(key);
    ghosts_[reused].Add(key);
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
  int64_t remembered(bool reused) const { return ghosts_[reused].size(); }

 private:
  int64_t capacity_;
  int64_t head_start_ = 0;
  uint64_t clock_ = 0;
  // Keys evicted lately, by kind: [0] never reused, [1] reused.
  EvictedKeys<Key, Hasher> ghosts_[2] = {EvictedKeys<Key, Hasher>(capacity_),
                                         EvictedKeys<Key, Hasher>(capacity_)};
};

}  // namespace kvmesh
