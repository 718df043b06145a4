// Scheduler: decides, each engine step, which tokens of which requests the
// model computes — continuous batching with chunked prefill.
//
// Every step has a token budget. Running requests come first, in arrival
// order: a decoding request takes one token, a request still in its prompt
// takes the next chunk that fits. Then waiting requests are admitted while
// budget, running slots and KV blocks last; an admitted request first reuses
// its longest cached prefix. The next one admitted is the one with the most
// cached prompt tokens among the first kAdmissionLookahead waiting (first
// come first served among equals): under memory pressure a request whose
// prefix is cached now (a session's next turn) would otherwise wait behind
// misses whose allocations evict that prefix, and then miss too. A preempted
// request, and one passed over kMaxPassOvers times, goes first regardless. When a running
// request needs a block and none is free, the most recently admitted running
// request is preempted: its blocks are freed and it goes back to the front of
// the waiting queue to be recomputed later (its cached blocks usually survive
// and make that cheap). A request that cannot fit even alone is reported so
// the engine can end it.
//
// The scheduler returns a plain ScheduleOutput and never touches tensors, so
// it is tested without a model. Not thread-safe: engine loop thread only.
#pragma once

#include <cstdint>
#include <deque>
#include <vector>

#include "worker/engine/request.h"
#include "worker/kv/kv_cache_manager.h"

namespace kvmesh {

// The most prompt tokens a step computes for a request that scores its
// prompt (prompt logprobs): each needs a row of logits.
inline constexpr int32_t kMaxScoredChunkTokens = 128;
// Cache-first admission (see above).
inline constexpr size_t kAdmissionLookahead = 16;
inline constexpr int32_t kMaxPassOvers = 8;

struct SchedulerLimits {
  int32_t max_tokens_per_step = 512;
  int32_t max_running = 64;
  int32_t max_waiting = 256;
};

struct ScheduledChunk {
  Request* request = nullptr;
  int32_t num_tokens = 0;  // tokens computed this step, from request->num_computed
  bool sample = false;     // the chunk ends at the last known token: sample next
};

struct ScheduleOutput {
  std::vector<ScheduledChunk> chunks;
  int32_t num_tokens = 0;
  std::vector<Request*> preempted;
  // Requests that cannot get the blocks they need even with nothing else
  // running; the engine ends them. They are no longer in any queue.
  std::vector<Request*> unfittable;
};

class Scheduler {
 public:
  Scheduler(KvCacheManager* kv, SchedulerLimits limits);

  const SchedulerLimits& limits() const { return limits_; }
  void set_limits(const SchedulerLimits& limits) { limits_ = limits; }

  bool waiting_full() const { return static_cast<int32_t>(waiting_.size()) >= limits_.max_waiting; }
  void AddWaiting(Request* request);
  // A request whose blocks are already allocated and computed (a forked
  // choice) joins the running ones.
  void AddRunning(Request* request) { running_.push_back(request); }

  ScheduleOutput Schedule();

  // Takes a finished or cancelled request out of the queues and frees its
  // blocks.
  void Remove(Request* request);

  const std::deque<Request*>& running() const { return running_; }
  const std::deque<Request*>& waiting() const { return waiting_; }
  int64_t num_preemptions() const { return num_preemptions_; }

 private:
  void Preempt(Request* request);
  // The index in waiting_ of the request to admit next.
  size_t PickNextWaiting();

  KvCacheManager* kv_;
  SchedulerLimits limits_;
  std::deque<Request*> running_;
  std::deque<Request*> waiting_;
  int64_t num_preemptions_ = 0;
};

}  // namespace kvmesh
