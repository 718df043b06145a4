// KvEventHub: fans the engine's KV events out to any number of subscribers
// (routers), each getting first a snapshot of every cached hash and then the
// numbered batches that follow it, with nothing lost or repeated in between.
//
// The hub mirrors the set of cached hashes of each tier by applying every batch it
// publishes, so a snapshot can be taken at any time, from any thread, without
// stopping the engine. Batches are numbered 1, 2, 3… under the engine's
// epoch; the snapshot carries the number of the last batch it includes.
//
// A subscriber that falls more than `max_queued` batches behind is closed
// (overflowed); it resubscribes and gets a fresh snapshot. Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "common/block_hash.h"
#include "worker/kv/kv_events.h"

namespace kvmesh {

struct KvEventBatch {
  uint64_t epoch = 0;
  uint64_t sequence = 0;
  bool snapshot = false;
  std::vector<KvEvent> events;
};

class KvEventHub;

class KvSubscription {
 public:
  // Waits up to `timeout` for the next batch. Returns false on timeout or
  // when the subscription is closed (check closed()).
  bool Next(KvEventBatch* out, std::chrono::milliseconds timeout);
  bool closed() const;
  bool overflowed() const;
  void Close();

 private:
  friend class KvEventHub;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<KvEventBatch> queue_;  // guarded by mu_
  bool closed_ = false;             // guarded by mu_
  bool overflowed_ = false;         // guarded by mu_
  size_t max_queued_ = 0;
};

class KvEventHub {
 public:
  explicit KvEventHub(uint64_t epoch) : epoch_(epoch) {}
  ~KvEventHub();

  uint64_t epoch() const { return epoch_; }
  uint64_t last_sequence() const;
  size_t num_cached_hashes(CacheTier tier = CacheTier::kDevice) const;

  // Numbers the events as the next batch, applies them to the mirror and
  // queues them for every subscriber. Empty input publishes nothing.
  void Publish(std::vector<KvEvent> events);

  std::shared_ptr<KvSubscription> Subscribe(size_t max_queued = 4096);

  // Closes every subscription (shutdown).
  void CloseAll();

  // Fault injection (WorkerAdmin.InjectFault): the next `batches` batches
  // are numbered and mirrored but reach no subscriber, which then sees a gap
  // in the numbering (as after a lost message) and must resubscribe.
  void DropNextBatches(uint32_t batches);
  uint32_t batches_to_drop() const;

 private:
  const uint64_t epoch_;
  mutable std::mutex mu_;
  uint64_t sequence_ = 0;  // guarded by mu_
  uint32_t drop_ = 0;      // batches still to drop; guarded by mu_
  static size_t TierIndex(CacheTier tier) { return tier == CacheTier::kHost ? 1 : 0; }
  // Hashes cached per tier (device, host), guarded by mu_.
  std::unordered_set<BlockHash, BlockHashHasher> cached_[2];
  std::vector<std::weak_ptr<KvSubscription>> subscribers_;  // guarded by mu_
};

}  // namespace kvmesh
