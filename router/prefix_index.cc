#include "router/prefix_index.h"

#include <absl/container/inlined_vector.h>

#include <algorithm>
#include <bit>

namespace kvmesh::router {

namespace {

// Guesses live at most this long, so deadlines on the index's wrapping 32-bit
// millisecond clock compare correctly (half its range is 24 days).
constexpr int64_t kMaxTtlMs = 24LL * 24 * 3600 * 1000;

// Blocks whose buckets an update asks the memory for ahead of its walk.
constexpr size_t kPrefetchAhead = 8;
// Blocks Match() reads at a time (after a first batch of 4).
constexpr size_t kMatchBatch = 16;

int64_t ClampTtl(std::chrono::milliseconds ttl) {
  return std::clamp<int64_t>(ttl.count(), 0, kMaxTtlMs);
}

}  // namespace

PrefixIndex::PrefixIndex(std::chrono::milliseconds optimistic_ttl, Now now)
    : ttl_ms_(ClampTtl(optimistic_ttl)), now_(std::move(now)), epoch_(now_()) {}

void PrefixIndex::set_optimistic_ttl(std::chrono::milliseconds ttl) {
  ttl_ms_.store(ClampTtl(ttl), std::memory_order_relaxed);
}

uint32_t PrefixIndex::NowMs() const {
  const auto elapsed = std::chrono::duration_cast<std::chrono::milliseconds>(now_() - epoch_);
  return static_cast<uint32_t>(elapsed.count());
}

uint8_t PrefixIndex::Entry::Tiers(int slot) const {
  if (wide_ != nullptr) {
    uint8_t tiers = 0;
    if (wide_->device.Contains(slot)) tiers |= kOnDevice;
    if (wide_->host.Contains(slot)) tiers |= kOnHost;
    for (const Holder& g : wide_->guesses) {
      if (g.slot == slot) tiers |= kGuessed;
    }
    return tiers;
  }
  for (const Holder& h : narrow_) {
    if (h.slot == slot) return h.tiers;
  }
  return 0;
}

void PrefixIndex::Entry::Set(int slot, uint8_t tiers, uint32_t guess_until) {
  const auto id = static_cast<uint16_t>(slot);
  if (wide_ == nullptr) {
    for (size_t i = 0; i < narrow_.size(); ++i) {
      if (narrow_[i].slot != id) continue;
      if (tiers == 0) {
        narrow_.erase(narrow_.begin() + static_cast<ptrdiff_t>(i));
      } else {
        narrow_[i] = {id, tiers, guess_until};
      }
      return;
    }
    if (tiers == 0) return;
    if (narrow_.size() < kNarrow) {
      narrow_.push_back({id, tiers, guess_until});
      return;
    }
    Widen();
  }
  WideHolders& w = *wide_;
  (tiers & kOnDevice) ? w.device.Add(slot) : w.device.Remove(slot);
  (tiers & kOnHost) ? w.host.Add(slot) : w.host.Remove(slot);
  auto it = std::find_if(w.guesses.begin(), w.guesses.end(),
                         [id](const Holder& g) { return g.slot == id; });
  if (tiers & kGuessed) {
    if (it == w.guesses.end()) {
      w.guesses.push_back({id, kGuessed, guess_until});
    } else {
      it->guess_until = guess_until;
    }
  } else if (it != w.guesses.end()) {
    w.guesses.erase(it);
  }
}

void PrefixIndex::Entry::Widen() {
  wide_ = std::make_unique<WideHolders>();
  for (const Holder& h : narrow_) {
    if (h.tiers & kOnDevice) wide_->device.Add(h.slot);
    if (h.tiers & kOnHost) wide_->host.Add(h.slot);
    if (h.tiers & kGuessed) wide_->guesses.push_back({h.slot, kGuessed, h.guess_until});
  }
  narrow_.clear();
  narrow_.shrink_to_fit();
}

bool PrefixIndex::Entry::unused() const {
  if (wide_ != nullptr) {
    return wide_->device.empty() && wide_->host.empty() && wide_->guesses.empty();
  }
  return narrow_.empty();
}

void PrefixIndex::Entry::Collect(uint32_t now_ms, int lo, int hi, Words* device, Words* host,
                                 Words* guessed) const {
  auto add = [lo, hi](Words* words, int slot) {
    const int w = slot >> 6;
    if (w >= lo && w < hi) (*words)[w] |= 1ull << (slot & 63);
  };
  if (wide_ != nullptr) {
    for (int w = lo; w < hi; ++w) {
      (*device)[w] = wide_->device.word(w);
      (*host)[w] = wide_->host.word(w);
    }
    for (const Holder& g : wide_->guesses) {
      if (!Expired(g.guess_until, now_ms)) add(guessed, g.slot);
    }
    return;
  }
  for (const Holder& h : narrow_) {
    if (h.tiers & kOnDevice) add(device, h.slot);
    if (h.tiers & kOnHost) add(host, h.slot);
    if ((h.tiers & kGuessed) && !Expired(h.guess_until, now_ms)) add(guessed, h.slot);
  }
}

void PrefixIndex::Entry::DropExpiredGuesses(uint32_t now_ms) {
  if (wide_ != nullptr) {
    std::erase_if(wide_->guesses,
                  [now_ms](const Holder& g) { return Expired(g.guess_until, now_ms); });
    return;
  }
  for (Holder& h : narrow_) {
    if ((h.tiers & kGuessed) && Expired(h.guess_until, now_ms)) h.tiers &= ~kGuessed;
  }
  narrow_.erase(
      std::remove_if(narrow_.begin(), narrow_.end(), [](const Holder& h) { return h.tiers == 0; }),
      narrow_.end());
}

uint8_t PrefixIndex::Entry::Forget(int slot) {
  const uint8_t tiers = Tiers(slot);
  if (tiers != 0) Set(slot, 0, 0);
  return tiers;
}

template <typename Fn>
void PrefixIndex::ForEachByShard(std::span<const BlockHash> hashes, Fn fn) {
  // A worker's event batch or a routed prompt: bucketed by shard (a
  // counting sort), each shard locked once, and the next hashes' buckets
  // asked of the memory ahead, as in Match().
  absl::InlinedVector<uint32_t, 256> order(hashes.size());
  std::array<uint32_t, kShards + 1> start{};
  for (const BlockHash& h : hashes) ++start[ShardIndex(h) + 1];
  for (int k = 0; k < kShards; ++k) start[k + 1] += start[k];
  std::array<uint32_t, kShards> next{};
  std::copy(start.begin(), start.end() - 1, next.begin());
  for (size_t i = 0; i < hashes.size(); ++i)
    order[next[ShardIndex(hashes[i])]++] = static_cast<uint32_t>(i);
  for (int k = 0; k < kShards; ++k) {
    if (start[k] == start[k + 1]) continue;
    Shard& shard = shards_[k];
    std::lock_guard<std::mutex> lock(shard.mu);
    for (uint32_t j = start[k]; j < start[k + 1]; ++j) {
      if (j + kPrefetchAhead < start[k + 1]) shard.map.prefetch(hashes[order[j + kPrefetchAhead]]);
      fn(shard.map, hashes[order[j]]);
    }
  }
}

void PrefixIndex::AddExact(int slot, std::span<const BlockHash> hashes, IndexTier tier) {
  const uint8_t bit = tier == IndexTier::kHost ? kOnHost : kOnDevice;
  ForEachByShard(hashes, [&](auto& map, const BlockHash& h) {
    Entry& e = map[h];
    const uint8_t tiers = e.Tiers(slot);
    if (!(tiers & (kOnDevice | kOnHost))) {
      exact_counts_[slot].fetch_add(1, std::memory_order_relaxed);
    }
    // The worker's own word ends the router's guess (confirmed).
    e.Set(slot, static_cast<uint8_t>((tiers & ~kGuessed) | bit), 0);
  });
}

void PrefixIndex::RemoveExact(int slot, std::span<const BlockHash> hashes, IndexTier tier) {
  const uint8_t bit = tier == IndexTier::kHost ? kOnHost : kOnDevice;
  ForEachByShard(hashes, [&](auto& map, const BlockHash& h) {
    auto it = map.find(h);
    if (it == map.end()) return;
    Entry& e = it->second;
    const uint8_t tiers = e.Tiers(slot);
    // The worker's own word on the block ends the router's guess about it.
    const auto left = static_cast<uint8_t>(tiers & ~(bit | kGuessed));
    if ((tiers & (kOnDevice | kOnHost)) && !left) {
      exact_counts_[slot].fetch_sub(1, std::memory_order_relaxed);
    }
    e.Set(slot, left, 0);
    if (e.unused()) map.erase(it);
  });
}

void PrefixIndex::RemoveWorker(int slot) {
  for (Shard& s : shards_) {
    std::lock_guard<std::mutex> lock(s.mu);
    for (auto it = s.map.begin(); it != s.map.end();) {
      Entry& e = it->second;
      if (e.Forget(slot) & (kOnDevice | kOnHost)) {
        exact_counts_[slot].fetch_sub(1, std::memory_order_relaxed);
      }
      if (e.unused()) {
        s.map.erase(it++);
      } else {
        ++it;
      }
    }
  }
}

void PrefixIndex::AddOptimistic(int slot, std::span<const BlockHash> hashes) {
  const uint32_t now_ms = NowMs();
  const auto until = static_cast<uint32_t>(
      now_ms + static_cast<uint32_t>(ttl_ms_.load(std::memory_order_relaxed)));
  ForEachByShard(hashes, [&](auto& map, const BlockHash& h) {
    Entry& e = map[h];
    const uint8_t tiers = e.Tiers(slot);
    if (tiers & kOnDevice) return;
    // On the host tier too: the request restores it.
    e.Set(slot, static_cast<uint8_t>(tiers | kGuessed), until);
  });
  const uint64_t n = added_.fetch_add(1, std::memory_order_relaxed) + 1;
  if (n % kSweepEvery == 0) SweepShard(shards_[(n / kSweepEvery) % kShards], now_ms);
}

size_t PrefixIndex::SweepShard(Shard& shard, uint32_t now_ms) {
  std::lock_guard<std::mutex> lock(shard.mu);
  size_t dropped = 0;
  for (auto it = shard.map.begin(); it != shard.map.end();) {
    Entry& e = it->second;
    e.DropExpiredGuesses(now_ms);
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
  const uint32_t now_ms = NowMs();
  size_t dropped = 0;
  for (Shard& s : shards_) dropped += SweepShard(s, now_ms);
  return dropped;
}

PrefixMatch PrefixIndex::Match(std::span<const BlockHash> hashes,
                               const WorkerSet& candidates) const {
  PrefixMatch m;
  // Per slot bit, over the words [lo, hi) that can still hold one:
  Words alive{};        // matching every block so far
  Words exact_alive{};  // likewise, counting only the workers' own events
  Words host_seen{};    // whose run has reached a host-only block
  std::array<int32_t, kMaxWorkersPerModel> host_run{};  // host-only blocks so far
  int lo = WorkerSet::kWords, hi = 0;
  for (int w = 0; w < WorkerSet::kWords; ++w) {
    alive[w] = exact_alive[w] = candidates.word(w);
    if (alive[w] != 0) {
      lo = std::min(lo, w);
      hi = w + 1;
    }
  }
  const uint32_t now_ms = NowMs();
  // The walk reads blocks in batches. A batch locks every shard it touches
  // at once (in shard order; writers hold one shard at a time, so this
  // cannot deadlock), asks the memory for all its buckets, then reads them:
  // with no lock operation (a fence) between the reads, their cache misses
  // (the map is far larger than the cache) overlap instead of following one
  // another. Batches grow from 4 blocks, so a miss at the first block (a new
  // prompt) reads few.
  struct Holders {
    bool found = false;
    Words device, host, guessed;  // words [lo, hi) only
  };
  std::array<Holders, kMatchBatch> batch;
  size_t batch_size = 4;
  for (size_t base = 0; base < hashes.size() && lo < hi;
       base += batch_size, batch_size = kMatchBatch) {
    const size_t n = std::min(batch_size, hashes.size() - base);
    uint32_t shards_touched = 0;  // bit k: shard k holds a block of the batch
    for (size_t j = 0; j < n; ++j) {
      Holders& h = batch[j];
      h.found = false;
      std::fill(h.device.begin() + lo, h.device.begin() + hi, 0);
      std::fill(h.host.begin() + lo, h.host.begin() + hi, 0);
      std::fill(h.guessed.begin() + lo, h.guessed.begin() + hi, 0);
      shards_touched |= 1u << ShardIndex(hashes[base + j]);
    }
    for (uint32_t bits = shards_touched; bits != 0; bits &= bits - 1) {
      shards_[std::countr_zero(bits)].mu.lock();
    }
    for (size_t j = 0; j < n; ++j) {
      const BlockHash& hash = hashes[base + j];
      shards_[ShardIndex(hash)].map.prefetch(hash);
    }
    for (size_t j = 0; j < n; ++j) {
      const BlockHash& hash = hashes[base + j];
      const auto& map = shards_[ShardIndex(hash)].map;
      auto it = map.find(hash);
      if (it == map.end()) continue;
      batch[j].found = true;
      it->second.Collect(now_ms, lo, hi, &batch[j].device, &batch[j].host, &batch[j].guessed);
    }
    for (uint32_t bits = shards_touched; bits != 0; bits &= bits - 1) {
      shards_[std::countr_zero(bits)].mu.unlock();
    }
    for (size_t j = 0; j < n && lo < hi; ++j) {
      const Holders& h = batch[j];
      if (!h.found) return m;
      const auto blocks = static_cast<int32_t>(base + j + 1);
      int new_lo = WorkerSet::kWords, new_hi = 0;
      bool any_alive = false;
      for (int w = lo; w < hi; ++w) {
        const uint64_t exact = h.device[w] | h.host[w];
        // On the host tier only; routed there since (optimistic) means the
        // request restored it.
        const uint64_t host_only = h.host[w] & ~(h.device[w] | h.guessed[w]);
        // A worker restores host blocks only after its device ones: a device
        // block after a host-only one ends what it would reuse.
        alive[w] = alive[w] & (exact | h.guessed[w]) & ~(host_seen[w] & ~host_only);
        exact_alive[w] &= exact;
        host_seen[w] |= alive[w] & host_only;
        for (uint64_t bits = alive[w]; bits != 0; bits &= bits - 1) {
          const int bit = std::countr_zero(bits);
          const int slot = w * 64 + bit;
          m.blocks[slot] = blocks;
          if ((host_only >> bit) & 1) ++host_run[slot];
          m.host_blocks[slot] = host_run[slot];
        }
        for (uint64_t bits = exact_alive[w]; bits != 0; bits &= bits - 1) {
          m.exact_blocks[w * 64 + std::countr_zero(bits)] = blocks;
        }
        any_alive |= alive[w] != 0;
        if ((alive[w] | exact_alive[w]) != 0) {
          new_lo = std::min(new_lo, w);
          new_hi = w + 1;
        }
      }
      if (!any_alive) return m;
      lo = new_lo;
      hi = new_hi;
    }
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
