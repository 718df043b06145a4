// PrefixIndex: which workers hold which KV blocks, for one model.
//
// Fed by every worker's KV events (exact: a hash is present from its
// BlockStored until its BlockRemoved) and by the router's own routing
// decisions (optimistic: when a request is sent to a worker, its block hashes
// are expected there shortly, before the worker's events say so; such
// entries expire after a TTL unless confirmed). The optimistic entries make a
// burst of same-prefix requests land together. Each worker's guess expires on
// its own, and expired guesses are swept a shard at a time as new ones are
// added, so hashes routed but never confirmed do not stay in memory. Time is
// read from an injectable clock (tests step it).
//
// Exact entries carry the worker's cache tier: a block on its device is
// ready, one in its host-RAM tier must be copied back first (cheaper than a
// recompute, dearer than a hit). Match() walks a request's chained block
// hashes from the first and reports, per worker, how many leading blocks it
// holds in any tier, and how many of those only in its host tier; because
// hashes chain, a worker holding block i holds the whole prefix up to i.
//
// Thread-safe: sharded by hash, each shard behind its own mutex, so event
// streams of many workers and many routing threads proceed in parallel.
#pragma once

#include <absl/container/flat_hash_map.h>
#include <absl/container/inlined_vector.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <mutex>
#include <span>
#include <vector>

#include "common/block_hash.h"
#include "router/worker_set.h"

namespace kvmesh::router {

struct PrefixMatch {
  // blocks[slot] = leading blocks of the request that worker `slot` holds
  // (exact or optimistic), for slots in `candidates`.
  std::array<int32_t, kMaxWorkersPerModel> blocks{};
  // Leading blocks confirmed by the worker's own events, per slot.
  std::array<int32_t, kMaxWorkersPerModel> exact_blocks{};
  // Of blocks[slot], those the worker holds only in its host tier.
  std::array<int32_t, kMaxWorkersPerModel> host_blocks{};
};

enum class IndexTier { kDevice, kHost };

class PrefixIndex {
 public:
  using Clock = std::chrono::steady_clock;
  using Now = std::function<Clock::time_point()>;
  explicit PrefixIndex(std::chrono::milliseconds optimistic_ttl = std::chrono::seconds(20),
                       Now now = Clock::now);

  // The optimistic TTL for entries added from now on.
  void set_optimistic_ttl(std::chrono::milliseconds ttl);

  // Exact updates from a worker's event stream.
  void AddExact(int slot, std::span<const BlockHash> hashes, IndexTier tier = IndexTier::kDevice);
  void RemoveExact(int slot, std::span<const BlockHash> hashes,
                   IndexTier tier = IndexTier::kDevice);
  // Forgets everything about a worker (failure, AllCleared, resubscribe).
  void RemoveWorker(int slot);

  // Records that `hashes` were routed to `slot`, until the TTL from now
  // (each worker's guess on its own clock). Every kSweepEvery calls, one
  // shard's expired guesses are dropped.
  void AddOptimistic(int slot, std::span<const BlockHash> hashes);

  // Drops every expired optimistic guess, and the hashes left with no
  // holder; returns how many hashes went.
  size_t SweepExpired();

  // Leading-block matches of `hashes` for the slots in `candidates`.
  PrefixMatch Match(std::span<const BlockHash> hashes, const WorkerSet& candidates) const;

  size_t size() const;  // hashes with any holder
  // Hashes the worker's own events put in the index, in any tier (kept as a
  // counter).
  size_t exact_count(int slot) const;

 private:
  struct Guess {
    int32_t slot;
    Clock::time_point until;
  };
  struct Entry {
    WorkerSet exact;                           // on the worker's device
    WorkerSet host;                            // in the worker's host tier
    absl::InlinedVector<Guess, 1> optimistic;  // routed there, not yet confirmed
    bool unused() const { return exact.empty() && host.empty() && optimistic.empty(); }
    // The slots whose guess has not expired at `now`.
    WorkerSet Guessed(Clock::time_point now) const;
    void ForgetGuess(int slot);
  };
  static constexpr int kSweepEvery = 256;
  static constexpr int kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    absl::flat_hash_map<BlockHash, Entry, BlockHashHasher> map;  // guarded by mu
  };
  Shard& ShardOf(const BlockHash& h) { return shards_[h.bytes[8] % kShards]; }
  const Shard& ShardOf(const BlockHash& h) const { return shards_[h.bytes[8] % kShards]; }

  // Drops the expired guesses in one shard; returns the hashes it dropped.
  size_t SweepShard(Shard& shard, Clock::time_point now);

  std::atomic<int64_t> ttl_ms_;
  const Now now_;
  std::atomic<uint64_t> added_{0};  // AddOptimistic calls, for the sweep
  std::array<Shard, kShards> shards_;
  std::array<std::atomic<int64_t>, kMaxWorkersPerModel> exact_counts_{};
};

}  // namespace kvmesh::router
