#include "router/prefix_index.h"

#include <algorithm>

namespace kvmesh::router {

PrefixIndex::PrefixIndex(std::chrono::milliseconds optimistic_ttl, Now now)
    : ttl_ms_(optimistic_ttl.count()), now_(std::move(now)) {}

void PrefixIndex::set_optimistic_ttl(std::chrono::milliseconds ttl) {
  ttl_ms_.store(ttl.count(), std::memory_order_relaxed);
}

WorkerSet PrefixIndex::Entry::Guessed(Clock::time_point now) const {
  WorkerSet s;
  for (const Guess& g : optimistic) {
    if (now < g.until) s.Add(g.slot);
  }
  return s;
}

void PrefixIndex::Entry::ForgetGuess(int slot) {
  for (size_t i = 0; i < optimistic.size(); ++i) {
    if (optimistic[i].slot == slot) {
      optimistic.erase(optimistic.begin() + i);
      return;
    }
  }
}

void PrefixIndex::AddExact(int slot, std::span<const BlockHash> hashes, IndexTier tier) {
  for (const BlockHash& h : hashes) {
    Shard& s = ShardOf(h);
    std::lock_guard<std::mutex> lock(s.mu);
    Entry& e = s.map[h];
    const bool known = e.exact.Contains(slot) || e.host.Contains(slot);
    if (!known) exact_counts_[slot].fetch_add(1, std::memory_order_relaxed);
    (tier == IndexTier::kHost ? e.host : e.exact).Add(slot);
    e.ForgetGuess(slot);  // confirmed
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
    e.ForgetGuess(slot);
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
      e.ForgetGuess(slot);
      if (e.unused()) {
        s.map.erase(it++);
      } else {
        ++it;
      }
    }
  }
}

void PrefixIndex::AddOptimistic(int slot, std::span<const BlockHash> hashes) {
  const Clock::time_point now = now_();
  const Clock::time_point until =
      now + std::chrono::milliseconds(ttl_ms_.load(std::memory_order_relaxed));
  for (const BlockHash& h : hashes) {
    Shard& s = ShardOf(h);
    std::lock_guard<std::mutex> lock(s.mu);
    Entry& e = s.map[h];
    if (e.exact.Contains(slot)) continue;
    // On the host tier too: the request restores it.
    bool found = false;
    for (Guess& g : e.optimistic) {
      if (g.slot == slot) {
        g.until = until;
        found = true;
      }
    }
    if (!found) e.optimistic.push_back({slot, until});
  }
  const uint64_t n = added_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n % kSweepEvery == 0) SweepShard(shards_[(n / kSweepEvery) % kShards], now);
}

size_t PrefixIndex::SweepShard(Shard& shard, Clock::time_point now) {
  std::lock_guard<std::mutex> lock(shard.mu);
  size_t dropped = 0;
  for (auto it = shard.map.begin(); it != shard.map.end();) {
    Entry& e = it->second;
    e.optimistic.erase(std::remove_if(e.optimistic.begin(), e.optimistic.end(),
                                      [&](const Guess& g) { return !(now < g.until); }),
                       e.optimistic.end());
    if (e.unused()) {
      shard.map.erase(it++);
      ++dropped;
    } else {
      ++it;
    }
  }
  return dropped;
}

size_t PrefixIndex::SweepExpired() {
  const Clock::time_point now = now_();
  size_t dropped = 0;
  for (Shard& s : shards_) dropped += SweepShard(s, now);
  return dropped;
}

PrefixMatch PrefixIndex::Match(std::span<const BlockHash> hashes,
                               const WorkerSet& candidates) const {
  PrefixMatch m;
  WorkerSet alive = candidates;        // still matching every block so far
  WorkerSet exact_alive = candidates;  // likewise, counting only exact entries
  const Clock::time_point now = now_();
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
      const WorkerSet guessed = e.Guessed(now);
      holders = exact | guessed;
      // Routed there since (optimistic) means the request restored it.
      host_only = e.host - (e.exact | guessed);
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
