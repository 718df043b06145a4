#include "router/prefix_index.h"

namespace kvmesh::router {

PrefixIndex::PrefixIndex(std::chrono::milliseconds optimistic_ttl) : ttl_(optimistic_ttl) {}

void PrefixIndex::AddExact(int slot, std::span<const BlockHash> hashes) {
  for (const BlockHash& h : hashes) {
    Shard& s = ShardOf(h);
    std::lock_guard<std::mutex> lock(s.mu);
    Entry& e = s.map[h];
    if (!e.exact.Contains(slot)) exact_counts_[slot].fetch_add(1, std::memory_order_relaxed);
    e.exact.Add(slot);
    e.optimistic.Remove(slot);  // confirmed
  }
}

void PrefixIndex::RemoveExact(int slot, std::span<const BlockHash> hashes) {
  for (const BlockHash& h : hashes) {
    Shard& s = ShardOf(h);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(h);
    if (it == s.map.end()) continue;
    if (it->second.exact.Contains(slot))
      exact_counts_[slot].fetch_sub(1, std::memory_order_relaxed);
    it->second.exact.Remove(slot);
    it->second.optimistic.Remove(slot);
    if (it->second.exact.empty() && it->second.optimistic.empty()) s.map.erase(it);
  }
}

void PrefixIndex::RemoveWorker(int slot) {
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto it = s.map.begin(); it != s.map.end();) {
      if (it->second.exact.Contains(slot))
        exact_counts_[slot].fetch_sub(1, std::memory_order_relaxed);
      it->second.exact.Remove(slot);
      it->second.optimistic.Remove(slot);
      if (it->second.exact.empty() && it->second.optimistic.empty()) {
        s.map.erase(it++);
      } else {
        ++it;
      }
    }
  }
}

void PrefixIndex::AddOptimistic(int slot, std::span<const BlockHash> hashes) {
  const Clock::time_point until = Clock::now() + ttl_;
  for (const BlockHash& h : hashes) {
    Shard& s = ShardOf(h);
    std::lock_guard<std::mutex> lock(s.mu);
    Entry& e = s.map[h];
    if (e.exact.Contains(slot)) continue;
    e.optimistic.Add(slot);
    e.optimistic_until = until;
  }
}

PrefixMatch PrefixIndex::Match(std::span<const BlockHash> hashes,
                               const WorkerSet& candidates) const {
  PrefixMatch m;
  WorkerSet alive = candidates;        // still matching every block so far
  WorkerSet exact_alive = candidates;  // likewise, counting only exact entries
  const Clock::time_point now = Clock::now();
  for (size_t i = 0; i < hashes.size() && !alive.empty(); ++i) {
    WorkerSet holders, exact;
    {
      const Shard& s = ShardOf(hashes[i]);
      std::lock_guard<std::mutex> lock(s.mu);
      auto it = s.map.find(hashes[i]);
      if (it == s.map.end()) break;
      exact = it->second.exact;
      holders = exact;
      if (now < it->second.optimistic_until) holders = holders | it->second.optimistic;
    }
    alive = alive & holders;
    exact_alive = exact_alive & exact;
    alive.ForEach([&](int slot) { m.blocks[slot] = static_cast<int32_t>(i + 1); });
    exact_alive.ForEach([&](int slot) { m.exact_blocks[slot] = static_cast<int32_t>(i + 1); });
  }
  return m;
}

size_t PrefixIndex::size() const {
  size_t n = 0;
  for (const Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    n += s.map.size();
  }
  return n;
}

size_t PrefixIndex::exact_count(int slot) const {
  return static_cast<size_t>(exact_counts_[slot].load(std::memory_order_relaxed));
}

}  // namespace kvmesh::router
