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
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "common/block_hash.h"
#include "router/huge_page_allocator.h"
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

  // The optimistic TTL for entries added from now on (at most 24 days).
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
  // Tiers of one worker's hold on a block (bits).
  static constexpr uint8_t kOnDevice = 1;  // exact: on the worker's device
  static constexpr uint8_t kOnHost = 2;    // exact: in the worker's host tier
  static constexpr uint8_t kGuessed = 4;   // optimistic: routed there, not yet confirmed
  struct Holder {
    uint16_t slot;
    uint8_t tiers;
    uint32_t guess_until;  // the index's milliseconds (wrapping), when kGuessed
  };
  struct WideHolders {
    WorkerSet device, host;
    std::vector<Holder> guesses;  // tiers == kGuessed only
  };
  using Words = std::array<uint64_t, WorkerSet::kWords>;
  // The holders of one block in 32 bytes: most blocks live on one to a few
  // workers and keep them in a short list; a block on more than kNarrow
  // workers (a system prompt shared by the whole fleet) moves to a bitmask
  // per tier, so Match() stays a few word operations per block either way.
  class Entry {
   public:
    static constexpr size_t kNarrow = 8;
    uint8_t Tiers(int slot) const;
    // Sets the slot's tiers (0 drops it); `guess_until` matters with kGuessed.
    void Set(int slot, uint8_t tiers, uint32_t guess_until);
    bool unused() const;
    // The holders at `now_ms` among slots 64*lo .. 64*hi-1, as bits of the
    // words [lo, hi) of each tier (unexpired guesses only); the caller zeroed
    // them.
    void Collect(uint32_t now_ms, int lo, int hi, Words* device, Words* host, Words* guessed) const;
    // Drops the guesses expired at `now_ms`.
    void DropExpiredGuesses(uint32_t now_ms);
    // Drops every hold of `slot`; returns the tiers it had.
    uint8_t Forget(int slot);

   private:
    void Widen();
    absl::InlinedVector<Holder, 2> narrow_;
    std::unique_ptr<WideHolders> wide_;  // when set, narrow_ is empty
  };
  static bool Expired(uint32_t until, uint32_t now_ms) {
    return static_cast<int32_t>(until - now_ms) <= 0;
  }
  uint32_t NowMs() const;

  static constexpr int kSweepEvery = 256;
  static constexpr int kShards = 16;
  struct Shard {
    mutable std::mutex mu;
    absl::flat_hash_map<BlockHash, Entry, BlockHashHasher, std::equal_to<BlockHash>,
                        HugePageAllocator<std::pair<const BlockHash, Entry>>>
        map;  // guarded by mu
  };
  static int ShardIndex(const BlockHash& h) { return h.bytes[8] % kShards; }

  // Calls fn(map, hash) for each of `hashes` under its shard's lock, taking
  // each lock once (defined in the .cc, its only user).
  template <typename Fn>
  void ForEachByShard(std::span<const BlockHash> hashes, Fn fn);
  // Drops the expired guesses in one shard; returns the hashes it dropped.
  size_t SweepShard(Shard& shard, uint32_t now_ms);

  std::atomic<int64_t> ttl_ms_;
  const Now now_;
  const Clock::time_point epoch_;   // NowMs() counts from here
  std::atomic<uint64_t> added_{0};  // AddOptimistic calls, for the sweep
  std::array<Shard, kShards> shards_;
  std::array<std::atomic<int64_t>, kMaxWorkersPerModel> exact_counts_{};
};

}  // namespace kvmesh::router
