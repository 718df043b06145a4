// The routing policy's view of each candidate worker of a decision: its last
// load report, this router's own in-flight count, and what it holds of the
// request's prefix.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "router/policies/policy.h"
#include "router/prefix_index.h"
#include "router/registry.h"
#include "router/session_affinity.h"
#include "router/worker_client.h"
#include "router/worker_set.h"

namespace kvmesh::router {

// Appends a view of each healthy worker of `snap` in `candidates`, and its
// entry in the snapshot (valid while `snap` lives), in the snapshot's order. `max_cacheable_blocks`
// caps the prefix reuse counted; with `prompt_logprobs` none counts (scoring the prompt needs every
// position's logits). The session's worker in `hint` is presumed to hold the session's last prompt
// while the hint is `recent`.
void BuildWorkerViews(const ModelSnapshot& snap, const WorkerSet& candidates,
                      const PrefixMatch& match, int32_t max_cacheable_blocks, bool prompt_logprobs,
                      const std::optional<SessionAffinity::Hint>& hint,
                      std::vector<WorkerView>* views, std::vector<const Candidate*>* conns);

// The candidates a decision weighs in a large fleet: every one holding part
// of the prompt (device, host tier or guess), the session's worker
// (`session_slot`, -1: none), and `sample` slots of `snap` drawn at random
// (those not in `candidates` are skipped, so fewer may come; if none come at
// all, every candidate, so that a decision always has one). The policy's
// least-loaded choice then picks among the sample: with 64 drawn from
// a thousand, the chosen worker is almost surely among the least-loaded
// tenth (the "power of d choices").
WorkerSet SampleCandidates(const ModelSnapshot& snap, const WorkerSet& candidates,
                           const PrefixMatch& match, int sample, int session_slot);

// How much of the prompt the session's worker must hold to keep the session:
// half of the smaller of the prompt and the session's last prompt there (a
// turn that brings more than the context so far does not count as an
// eviction), within what a worker can hold of it; 0 when the request scores
// its prompt (no cached token counts then) or has no session worker.
int32_t SessionHoldTokens(const std::optional<SessionAffinity::Hint>& hint, int32_t prompt_tokens,
                          int32_t max_cacheable_tokens, bool prompt_logprobs);

// The session's worker in `hint`, when it is among `views`, holds at least
// `hold_tokens` of the prompt (SessionHoldTokens) and carries at most
// guard_ratio × (the least load + 1) + guard_slack requests: sets `decision`
// to it (reason "session") and returns true. Otherwise (it evicted the
// session's context, is overloaded, gone or already tried) false, and the
// policy decides.
bool StickToSession(const std::optional<SessionAffinity::Hint>& hint,
                    const std::vector<WorkerView>& views, int32_t hold_tokens, double guard_ratio,
                    int32_t guard_slack, Decision* decision);

}  // namespace kvmesh::router
