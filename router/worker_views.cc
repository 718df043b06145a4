#include "router/worker_views.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <limits>

namespace kvmesh::router {

void BuildWorkerViews(const ModelSnapshot& snap, const WorkerSet& candidates,
                      const PrefixMatch& match, int32_t max_cacheable_blocks, bool prompt_logprobs,
                      const std::optional<SessionAffinity::Hint>& hint,
                      std::vector<WorkerView>* views, std::vector<const Candidate*>* conns) {
  const ModelGroup& group = *snap.group;
  // The weighed candidates only: a vector for a thousand views is past
  // malloc's mmap threshold, a page-faulting allocation per request.
  const auto weighed = std::min<size_t>(candidates.size(), snap.healthy().size());
  views->reserve(views->size() + weighed);
  conns->reserve(conns->size() + weighed);
  const size_t first = conns->size();
  for (const Candidate& c : snap.healthy()) {
    if (candidates.Contains(c.slot)) conns->push_back(&c);
  }
  // Each weighed client is an object of its own, read once: ask the memory
  // for the next ones' routing state while this one is read.
  constexpr size_t kAhead = 8;
  const size_t n = conns->size();
  for (size_t i = first; i < std::min(n, first + kAhead); ++i) {
    (*conns)[i]->worker->PrefetchRoutingState();
  }
  for (size_t i = first; i < n; ++i) {
    if (i + kAhead < n) (*conns)[i + kAhead]->worker->PrefetchRoutingState();
    const Candidate& c = *(*conns)[i];
    const RoutingLoad load = c.worker->routing_load();
    WorkerView v;
    v.slot = c.slot;
    v.id = c.worker->routing_id();
    // The report lags: drop this router's requests that finished since.
    const int32_t stale = c.worker->finished_since_poll.load();
    v.running = std::max<int32_t>(0, load.running - stale);
    v.waiting = load.waiting;
    v.queued_prefill_tokens = load.queued_prefill_tokens;
    v.prefill_inflight_tokens = c.worker->prefill_inflight.load();
    v.step_tokens = static_cast<int32_t>(load.max_tokens_per_step);
    v.inflight = c.worker->inflight.load();
    v.prefill_tokens_per_s = load.prefill_tokens_per_s;
    v.blocks_free = load.kv_blocks_free;
    v.blocks_total = load.kv_blocks_total;
    v.blocks_cached = load.kv_blocks_cached;
    // Scoring the prompt reuses no cached prefix (it needs every position's logits).
    v.cached_tokens = prompt_logprobs
                          ? 0
                          : std::min(match.blocks[c.slot], max_cacheable_blocks) * group.block_size;
    // Host-tier blocks follow the device ones; a cap trims them first.
    const int32_t device_blocks = match.blocks[c.slot] - match.host_blocks[c.slot];
    v.host_cached_tokens = std::max(
        0, v.cached_tokens - std::min(device_blocks, max_cacheable_blocks) * group.block_size);
    v.host_restore_tokens_per_s = load.host_restore_tokens_per_s;
    v.peer_fetch_tokens_per_s = load.peer_fetch_tokens_per_s;
    v.refill_ratio = load.kv_refill_ratio;
    if (hint && hint->recent && hint->worker_id == v.id && !prompt_logprobs) {
      // Presumed to hold what the session's last prompt left there, until
      // the worker's events have had time to say so.
      const int32_t presumed =
          std::min(hint->prompt_tokens, max_cacheable_blocks * group.block_size);
      v.cached_tokens = std::max(v.cached_tokens, presumed);
    }
    views->push_back(v);
  }
}

WorkerSet SampleCandidates(const ModelSnapshot& snap, const WorkerSet& candidates,
                           const PrefixMatch& match, int sample, int session_slot) {
  WorkerSet chosen;
  candidates.ForEach([&](int slot) {
    if (match.blocks[slot] > 0) chosen.Add(slot);
  });
  if (session_slot >= 0 && session_slot < kMaxWorkersPerModel &&
      candidates.Contains(session_slot)) {
    chosen.Add(session_slot);
  }
  if (snap.healthy().empty()) return chosen;
  // xorshift64*, one stream per thread: cheap, and unlike a shared engine
  // no routing thread waits for another.
  thread_local uint64_t state =
      0x9E3779B97F4A7C15ull ^ reinterpret_cast<uintptr_t>(&state) ^
      static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  for (int i = 0; i < sample; ++i) {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    const uint64_t r = state * 0x2545F4914F6CDD1Dull;
    const Candidate& c = snap.healthy()[(r >> 32) % snap.healthy().size()];
    if (candidates.Contains(c.slot)) chosen.Add(c.slot);
  }
  // Every draw missed the candidates (few of the healthy workers, none
  // holding anything): all of them, rather than nothing to decide among.
  if (chosen.empty()) return candidates;
  return chosen;
}

int32_t SessionHoldTokens(const std::optional<SessionAffinity::Hint>& hint, int32_t prompt_tokens,
                          int32_t max_cacheable_tokens, bool prompt_logprobs) {
  if (!hint || prompt_logprobs) return 0;  // no session, or no view counts a cached token
  return std::min({prompt_tokens, hint->prompt_tokens, max_cacheable_tokens}) / 2;
}

bool StickToSession(const std::optional<SessionAffinity::Hint>& hint,
                    const std::vector<WorkerView>& views, int32_t hold_tokens, double guard_ratio,
                    int32_t guard_slack, Decision* decision) {
  if (!hint) return false;
  int32_t least = std::numeric_limits<int32_t>::max();
  for (const WorkerView& v : views) least = std::min(least, v.load());
  for (size_t i = 0; i < views.size(); ++i) {
    if (views[i].id != hint->worker_id) continue;
    // Its context evicted there: the session has no home to keep.
    if (views[i].cached_tokens < hold_tokens) return false;
    const double limit = guard_ratio * (least + 1) + guard_slack;
    if (views[i].load() > limit) return false;  // overloaded: the policy decides
    *decision = {static_cast<int>(i), "session"};
    return true;
  }
  return false;  // the session's worker is gone or was tried
}

}  // namespace kvmesh::router
