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
#include <functional>

#include "worker/kv/evicted_keys.h"

namespace kvmesh {

template <typename Key, typename Hasher = std::hash<Key>>
class RefillMeter {
 public:
  explicit RefillMeter(int64_t capacity_blocks)
      : evicted_(capacity_blocks),
        keep_(1.0 - 1.0 / static_cast<double>(std::max<int64_t>(1, capacity_blocks))) {}

  // A block evicted from the cache.
  void Evicted(const Key& key) { evicted_.Add(key); }

  // A block stored (its hash's first copy in the cache). Returns whether it
  // is a refill.
  bool Stored(const Key& key) {
    const bool refill = evicted_.Erase(key);
    stores_ = stores_ * keep_ + 1;
    refills_ = refills_ * keep_ + (refill ? 1 : 0);
    return refill;
  }

  // Refills over stores in about the last turnover; 0 before any store.
  double ratio() const { return stores_ > 0 ? refills_ / stores_ : 0; }
  // Evicted keys remembered (at most the cache's size).
  int64_t remembered() const { return evicted_.size(); }

 private:
  EvictedKeys<Key, Hasher> evicted_;
  double keep_;  // weight kept per store
  double stores_ = 0, refills_ = 0;
};

}  // namespace kvmesh
