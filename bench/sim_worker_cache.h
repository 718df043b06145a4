// The worker side of bench/scale_sim: block keys and a worker's paged KV
// cache (pinned blocks of running requests, the rest least recently used
// first, or in the adaptive order of worker/kv/adaptive_order.h), which
// reports its stores and evictions in order as a worker's KV events do.
#pragma once

#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "common/block_hash.h"
#include "worker/kv/adaptive_order.h"
#include "worker/kv/refill_meter.h"

namespace kvmesh::bench {

inline uint64_t Mix(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// A block's key: its hash's first 8 bytes (uniform, as chained hashes are).
inline uint64_t TenantBlock(int tenant, int64_t i) {
  return Mix(Mix(static_cast<uint64_t>(tenant) + 1) ^ static_cast<uint64_t>(i));
}
inline uint64_t SessionBlock(uint64_t uid, int64_t j) {
  return Mix(Mix(uid + 0x5E55100000000ull) ^ static_cast<uint64_t>(j));
}
inline kvmesh::BlockHash HashOf(uint64_t key) {
  kvmesh::BlockHash h;
  const uint64_t hi = Mix(key);
  std::memcpy(h.bytes.data(), &key, 8);
  std::memcpy(h.bytes.data() + 8, &hi, 8);
  return h;
}

// One worker's paged KV cache: blocks of running requests pinned, the rest
// in eviction order (least recently used first, or adaptive). Reports what
// it stores and evicts (its KV events) in order.
class WorkerCache {
 public:
  explicit WorkerCache(int64_t capacity, KvEviction eviction = KvEviction::kLru)
      : capacity_(capacity), eviction_(eviction) {}

  // Leading blocks of `keys` held.
  int64_t Held(const std::vector<uint64_t>& keys) const {
    int64_t n = 0;
    while (n < static_cast<int64_t>(keys.size()) && map_.contains(keys[n])) ++n;
    return n;
  }
  void Pin(const std::vector<uint64_t>& keys) {
    for (uint64_t k : keys) {
      auto [it, added] = map_.try_emplace(k, 0);
      if (added) {
        it->second = NewNode(k);
        order_.Tick();
        refills_.Stored(k);
        Log(k, true);
        const int32_t id = it->second;
        // A block evicted lately and back counts as reused (AdaptiveOrder).
        nodes_[id].reused = eviction_ == KvEviction::kAdaptive && order_.Stored(k);
      } else {
        Node& n = nodes_[it->second];
        if (n.pins == 0) Unlink(it->second);
        n.reused = true;
      }
      ++nodes_[it->second].pins;
      if (nodes_[it->second].pins == 1) ++pinned_;
    }
    Evict();
  }
  // Back to the eviction order, the last block first (it goes first).
  void Unpin(const std::vector<uint64_t>& keys) {
    for (auto k = keys.rbegin(); k != keys.rend(); ++k) {
      auto it = map_.find(*k);
      if (it == map_.end()) continue;
      Node& n = nodes_[it->second];
      if (--n.pins == 0) {
        --pinned_;
        Append(it->second);
      }
    }
    Evict();
  }
  void Clear() {
    map_.clear();
    nodes_.clear();
    free_.clear();
    lists_[0] = lists_[1] = List{};
    pinned_ = unpinned_ = 0;
    order_ = AdaptiveOrder<uint64_t>(capacity_);
    refills_ = RefillMeter<uint64_t>(capacity_);
  }
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (const auto& [k, node] : map_) fn(k);
  }
  int64_t pinned() const { return pinned_; }
  int64_t unpinned() const { return unpinned_; }
  int64_t overflow() const { return overflow_; }
  // Of the blocks stored lately, the share evicted shortly before.
  double refill_ratio() const { return refills_.ratio(); }

  // Events since the last take: runs of stores and removals, in order.
  struct Run {
    bool stored = true;
    std::vector<uint64_t> keys;
  };
  std::vector<Run> TakeEvents() { return std::exchange(events_, {}); }

 private:
  struct Node {
    uint64_t key = 0;
    int32_t prev = -1, next = -1;
    int32_t pins = 0;
    bool reused = false;  // hit since it was stored
    uint64_t stamp = 0;   // when it joined its list (AdaptiveOrder's clock)
  };
  struct List {
    int32_t head = -1, tail = -1;
  };
  int32_t NewNode(uint64_t key) {
    int32_t i;
    if (!free_.empty()) {
      i = free_.back();
      free_.pop_back();
    } else {
      i = static_cast<int32_t>(nodes_.size());
      nodes_.emplace_back();
    }
    nodes_[i] = Node{key};
    return i;
  }
  // Under LRU every block is in list 0.
  List& ListOf(const Node& n) { return lists_[eviction_ == KvEviction::kAdaptive && n.reused]; }
  void Append(int32_t i) {
    List& l = ListOf(nodes_[i]);
    nodes_[i].stamp = order_.Now();
    nodes_[i].prev = l.tail;
    nodes_[i].next = -1;
    if (l.tail >= 0) nodes_[l.tail].next = i;
    l.tail = i;
    if (l.head < 0) l.head = i;
    ++unpinned_;
  }
  void Unlink(int32_t i) {
    Node& n = nodes_[i];
    List& l = ListOf(n);
    if (n.prev >= 0)
      nodes_[n.prev].next = n.next;
    else
      l.head = n.next;
    if (n.next >= 0)
      nodes_[n.next].prev = n.prev;
    else
      l.tail = n.prev;
    --unpinned_;
  }
  // The next block to evict, or -1 when every block is pinned.
  int32_t Victim() const {
    if (eviction_ == KvEviction::kLru) return lists_[0].head;
    auto stamp = [&](int l) {
      return lists_[l].head >= 0 ? std::optional<uint64_t>(nodes_[lists_[l].head].stamp)
                                 : std::nullopt;
    };
    return lists_[order_.TakeNeverReused(stamp(0), stamp(1)) ? 0 : 1].head;
  }
  void Evict() {
    while (static_cast<int64_t>(map_.size()) > capacity_) {
      const int32_t i = Victim();
      if (i < 0) break;
      Unlink(i);
      Log(nodes_[i].key, false);
      if (eviction_ == KvEviction::kAdaptive) order_.Evicted(nodes_[i].key, nodes_[i].reused);
      refills_.Evicted(nodes_[i].key);
      map_.erase(nodes_[i].key);
      free_.push_back(i);
    }
    if (static_cast<int64_t>(map_.size()) > capacity_) ++overflow_;  // all pinned
  }
  void Log(uint64_t key, bool stored) {
    if (events_.empty() || events_.back().stored != stored) events_.push_back({stored, {}});
    events_.back().keys.push_back(key);
  }

  const int64_t capacity_;
  const KvEviction eviction_;
  absl::flat_hash_map<uint64_t, int32_t> map_;
  std::vector<Node> nodes_;
  std::vector<int32_t> free_;
  List lists_[2];  // unpinned blocks: [0] never reused (all of them under LRU), [1] reused
  AdaptiveOrder<uint64_t> order_{capacity_};
  RefillMeter<uint64_t> refills_{capacity_};
  int64_t pinned_ = 0, unpinned_ = 0, overflow_ = 0;
  std::vector<Run> events_;
};

}  // namespace kvmesh::bench
