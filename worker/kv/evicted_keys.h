// EvictedKeys: the keys of a KV cache's most recently evicted blocks, at
// most `capacity` of them (one turnover of the cache). It is the memory
// from which AdaptiveOrder learns its head start and RefillMeter counts
// refills: a block stored while its key is remembered was evicted too soon.
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
class EvictedKeys {
 public:
  explicit EvictedKeys(int64_t capacity) : capacity_(std::max<int64_t>(1, capacity)) {}

  // Remembers `key` as evicted now (afresh if it already was), forgetting
  // the oldest keys beyond the capacity.
  void Add(const Key& key) {
    const uint64_t seq = next_seq_++;
    keys_[key] = seq;
    fifo_.emplace_back(key, seq);
    Trim();
  }
  // Forgets `key`; returns whether it was remembered.
  bool Erase(const Key& key) { return keys_.erase(key) > 0; }
  bool Contains(const Key& key) const { return keys_.contains(key); }
  // Keys remembered (at most the capacity).
  int64_t size() const { return static_cast<int64_t>(keys_.size()); }

 private:
  // Forgets the oldest keys beyond the capacity, and queue entries of keys
  // erased or added again since (stale).
  void Trim() {
    while (!fifo_.empty()) {
      const auto& [key, seq] = fifo_.front();
      auto it = keys_.find(key);
      const bool live = it != keys_.end() && it->second == seq;
      if (live && size() <= capacity_ && fifo_.size() <= 2 * static_cast<size_t>(capacity_)) {
        break;
      }
      if (live) keys_.erase(it);
      fifo_.pop_front();
    }
  }

  int64_t capacity_;
  std::unordered_map<Key, uint64_t, Hasher> keys_;  // key → its entry in fifo_
  std::deque<std::pair<Key, uint64_t>> fifo_;       // oldest first
  uint64_t next_seq_ = 0;
};

}  // namespace kvmesh
