// RefillMeter: the share of the blocks a KV cache stores that it held
// lately and evicted, a measure of how hard the cache thrashes.
//
// The meter remembers the keys of the last `capacity` blocks evicted (one
// turnover of the cache). A block stored while remembered is a refill: work
// the cache did again because it was too small for what its requests come
// back for. The ratio is refills over stores, each counted with a weight
// that decays by 1 / capacity per store, so it reads the last turnover or
// so of the cache, whatever the time that took.
//
// The router prices it (router/policies/prefix.cc): on a cache that refills
// a share r of what it stores, a token placed there evicts a cached one,
// whose next request recomputes it and evicts another, and so on, about
// 1 / (1 - r) tokens recomputed in all.
//
// Not thread-safe; the cache that owns it serializes calls.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <utility>

namespace kvmesh {

template <typename Key, typename Hasher = std::hash<Key>>
class RefillMeter {
 public:
  explicit RefillMeter(int64_t capacity_blocks)
      : capacity_(std::max<int64_t>(1, capacity_blocks)),
        keep_(1.0 - 1.0 / static_cast<double>(capacity_)) {}

  // A block evicted from the cache.
  void Evicted(const Key& key) {
    const uint64_t seq = next_seq_++;
    evicted_[key] = seq;
    fifo_.emplace_back(key, seq);
    Trim();
  }

  // A block stored (its hash's first copy in the cache). Returns whether it
  // is a refill.
  bool Stored(const Key& key) {
    auto it = evicted_.find(key);
    const bool refill = it != evicted_.end();
    if (refill) evicted_.erase(it);
    stores_ = stores_ * keep_ + 1;
    refills_ = refills_ * keep_ + (refill ? 1 : 0);
    return refill;
  }

  // Refills over stores in about the last turnover; 0 before any store.
  double ratio() const { return stores_ > 0 ? refills_ / stores_ : 0; }
  // Evicted keys remembered (at most the cache's size).
  int64_t remembered() const { return static_cast<int64_t>(evicted_.size()); }

 private:
  // Forgets the oldest keys beyond the cache's size, and queue entries of
  // keys stored again or evicted again since (stale).
  void Trim() {
    while (!fifo_.empty()) {
      const auto& [key, seq] = fifo_.front();
      auto it = evicted_.find(key);
      const bool live = it != evicted_.end() && it->second == seq;
      if (live && static_cast<int64_t>(evicted_.size()) <= capacity_ &&
          fifo_.size() <= 2 * static_cast<size_t>(capacity_)) {
        break;
      }
      if (live) evicted_.erase(it);
      fifo_.pop_front();
    }
  }

  int64_t capacity_;
  double keep_;                                        // weight kept per store
  std::unordered_map<Key, uint64_t, Hasher> evicted_;  // key → its entry in fifo_
  std::deque<std::pair<Key, uint64_t>> fifo_;
  uint64_t next_seq_ = 0;
  double stores_ = 0, refills_ = 0;
};

}  // namespace kvmesh
