#include "router/prefix_index.h"

namespace kvmesh::router {

PrefixIndex::PrefixIndex(std::chrono::milliseconds optimistic_ttl) : ttl_(optimistic_ttl) {}

void PrefixIndex::AddExact(int slot, std::span<const BlockHash> hashes, IndexTier tier) {
  for (const BlockHash& h : hashes) {
    Shard& s = ShardOf(h);
    std::lock_guard<std::mutex> lock(s.mu);
    Entry& e = s.map[h];
    const bool known = e.exact.Contains(slot) || e.host.Contains(slot);
    if (!known) exact_counts_[slot].fetch_add(1, std::memory_order_relaxed);
    (tier == IndexTier::kHost ? e.host : e.exact).Add(slot);
    e.optimistic.Remove(slot);  // confirmed
  }
}

void PrefixIndex::RemoveExact(int slot, std::span<const BlockHash> hashes, IndexTier tier) {
  for (const BlockHash& h : hashes) {
    Shard& s = ShardOf(h);
    std::lock_guard<std::mutex> lock(s.mu);
    auto it = s.map.find(h);
    if (it == s.map.end()) continue;
    Entry& e = it->second;
    const bool known = e.exact.Contains(slot) || e.host.Contains(slot);
    (tier == IndexTier::kHost ? e.host : e.exact).Remove(slot);
    if (known && !e.exact.Contains(slot) && !e.host.Contains(slot)) {
      exact_counts_[slot].fetch_sub(1, std::memory_order_relaxed);
    }
    // The worker's own word on the block ends the router's guess about it.
    e.optimistic.Remove(slot);
    if (e.unused()) s.map.erase(it);
  }
}

void PrefixIndex::RemoveWorker(int slot) {
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto it = s.map.begin(); it != s.map.end();) {
      Entry& e = it->second;
      if (e.exact.Contains(slot) || e.host.Contains(slot)) {
        exact_counts_[slot].fetch_sub(1, std::memory_order_relaxed);
      }
      e.exact.Remove(slot);
      e.host.Remove(slot);
      e.optimistic.Remove(slot);
      if (e.unused()) {
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
    e.optimistic.Add(slot);  // on the host tier too: the request restores it
    e.optimistic_until = until;
  }
}

PrefixMatch PrefixIndex::Match(std::span<const BlockHash> hashes,
                               const WorkerSet& candidates) const {
  PrefixMatch m;
  WorkerSet alive = candidates;        // still matching every block so far
  WorkerSet exact_alive = candidates;  // likewise, counting only exact entries
  const Clock::time_point now = Clock::now();
  std::array<int32_t, kMaxWorkersPerModel> host_run{};  // host-only blocks so far
  WorkerSet host_seen;  // slots whose run has reached a host-only block
  for (size_t i = 0; i < hashes.size() && !alive.empty(); ++i) {
    WorkerSet holders, exact, host_only;
    {
      const Shard& s = ShardOf(hashes[i]);
      std::lock_guard<std::mutex> lock(s.mu);
      auto it = s.map.find(hashes[i]);
      if (it == s.map.end()) break;
      const Entry& e = it->second;
      exact = e.exact | e.host;
      holders = exact;
      if (now < e.optimistic_until) holders = holders | e.optimistic;
      // Routed there since (optimistic) means the request restored it.
      host_only = e.host - (e.exact | (now < e.optimistic_until ? e.optimistic : WorkerSet()));
    }
    // A worker restores host blocks only after its device ones: a device
    // block after a host-only one ends what it would reuse.
    alive = (alive & holders) - (host_seen - host_only);
    exact_alive = exact_alive & exact;
    host_seen = host_seen | (alive & host_only);
    alive.ForEach([&](int slot) {
      m.blocks[slot] = static_cast<int32_t>(i + 1);
      if (host_only.Contains(slot)) ++host_run[slot];
      m.host_blocks[slot] = host_run[slot];
    });
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
