#include "worker/engine/scheduler.h"

#include <algorithm>
#include <climits>

namespace kvmesh {

namespace {

// Prompt chunks that are scored return every position's logits (chunk ×
// vocabulary floats) and are log-softmaxed on the loop thread: keep them
// small so a long prompt cannot hold a step (or memory) hostage.
int32_t ChunkLimit(const Request& r) {
  return r.wants_prompt_logprobs() && r.num_computed < r.num_prompt_tokens ? kMaxScoredChunkTokens
                                                                           : INT32_MAX;
}

}  // namespace

Scheduler::Scheduler(KvCacheManager* kv, SchedulerLimits limits) : kv_(kv), limits_(limits) {}

void Scheduler::AddWaiting(Request* request) { waiting_.push_back(request); }

void Scheduler::Preempt(Request* request) {
  kv_->Release(&request->kv);
  request->num_computed = 0;
  ++request->num_preemptions;
  ++num_preemptions_;
  waiting_.push_front(request);
}

void Scheduler::Remove(Request* request) {
  kv_->Release(&request->kv);
  auto drop = [request](std::deque<Request*>& q) {
    q.erase(std::remove(q.begin(), q.end(), request), q.end());
  };
  drop(running_);
  drop(waiting_);
}

size_t Scheduler::PickNextWaiting() {
  Request* front = waiting_.front();
  // A preempted request, or one passed over often enough, goes first.
  if (waiting_.size() == 1 || front->num_preemptions > 0 ||
      front->times_passed_over >= kMaxPassOvers)
    return 0;
  auto cached = [this](Request* r) {
    return r->wants_prompt_logprobs() ? 0 : kv_->FindCachedPrefix(&r->kv, r->tokens).num_tokens();
  };
  size_t best = 0;
  int32_t best_cached = cached(front);
  const size_t n = std::min(waiting_.size(), kAdmissionLookahead);
  for (size_t i = 1; i < n; ++i) {
    const int32_t c = cached(waiting_[i]);
    if (c > best_cached) {
      best = i;
      best_cached = c;
    }
  }
  if (best != 0) ++front->times_passed_over;
  return best;
}

ScheduleOutput Scheduler::Schedule() {
  ScheduleOutput out;
  int32_t budget = limits_.max_tokens_per_step;

  // Running requests, oldest first.
  for (size_t i = 0; i < running_.size() && budget > 0;) {
    Request* r = running_[i];
    const int32_t n = std::min({r->num_uncomputed(), budget, ChunkLimit(*r)});
    if (n <= 0) {
      ++i;
      continue;
    }
    bool scheduled = true;
    while (!kv_->AllocateSlots(&r->kv, r->num_computed + n)) {
      Request* victim = running_.back();
      if (victim == r && running_.size() == 1) {
        // Alone and still out of blocks: it can never fit.
        running_.pop_back();
        kv_->Release(&r->kv);
        out.unfittable.push_back(r);
        scheduled = false;
        break;
      }
      running_.pop_back();
      Preempt(victim);
      out.preempted.push_back(victim);
      if (victim == r) {
        scheduled = false;
        break;
      }
    }
    if (!scheduled) continue;  // r was removed; running_[i] is the next one (or end)
    out.chunks.push_back({r, n, r->num_computed + n == static_cast<int32_t>(r->tokens.size())});
    budget -= n;
    ++i;
  }

  // Admit waiting requests (not in a step that had to preempt: memory is
  // short, admitting would only thrash).
  if (out.preempted.empty()) {
    while (!waiting_.empty() && budget > 0 &&
           static_cast<int32_t>(running_.size()) < limits_.max_running) {
      if (const size_t pick = PickNextWaiting(); pick != 0) {
        Request* first = waiting_[pick];  // the others keep their order
        waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(pick));
        waiting_.push_front(first);
      }
      Request* r = waiting_.front();
      // Prompt logprobs need every position computed: no cached prefix.
      const CachedPrefix prefix =
          r->wants_prompt_logprobs() ? CachedPrefix{} : kv_->FindCachedPrefix(&r->kv, r->tokens);
      const int32_t found = prefix.num_tokens();
      const int32_t n =
          std::min({static_cast<int32_t>(r->tokens.size()) - found, budget, ChunkLimit(*r)});
      if (!kv_->AllocateSlots(&r->kv, found + n, &prefix)) {
        if (running_.empty()) {
          // Even an empty engine cannot hold this request's next chunk.
          waiting_.pop_front();
          out.unfittable.push_back(r);
          continue;
        }
        break;  // first come, first served: wait for blocks to free up
      }
      // Fewer than found when a host-tier copy failed: those are computed.
      const int32_t start = std::min(found, r->kv.num_cached_blocks * kv_->block_size());
      r->num_computed = start;
      if (r->num_cached_tokens < 0) r->num_cached_tokens = start;
      waiting_.pop_front();
      running_.push_back(r);
      // At most the step's budget even then (the blocks past it stay allocated).
      const int32_t chunk = std::min(found + n - start, budget);
      out.chunks.push_back({r, chunk, start + chunk == static_cast<int32_t>(r->tokens.size())});
      budget -= chunk;
    }
  }
  out.num_tokens = limits_.max_tokens_per_step - budget;
  return out;
}

}  // namespace kvmesh
