// RouterCore: the InferenceCore of kvmesh-router — resolve the model,
// tokenize (the model's own tokenizer, from its workers), hash the prompt's
// blocks, ask the prefix index what each healthy worker holds, let the policy
// choose, forward to that worker and relay its stream.
//
// A request that fails before its first token (worker unreachable, worker
// overloaded, worker died) is re-sent to another worker, at most
// `max_attempts` times in all; once tokens have been relayed a failure ends
// the stream with a clear error instead (the client has already seen text).
// Route is split in two: PlanAttempt (the choice, from the index, the loads
// and the policy) and Relay (one stream, under a WorkerLease that keeps the
// worker's client alive). Workers are reached through WorkerClient, so the
// whole of it runs against fakes in tests (router/router_core_test.cc).
// Thread-safe: each call runs on its caller's thread.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "router/inference_core.h"
#include "router/policies/policy.h"
#include "router/registry.h"
#include "router/router_metrics.h"
#include "router/routing_log.h"
#include "router/session_affinity.h"
#include "router/stream_watchdog.h"

namespace kvmesh::router {

struct RouterCoreOptions {
  int max_attempts = 3;
  int32_t default_max_tokens = 256;
  // Longest a request may go without progress (a token, or a prefill chunk
  // the worker reports); a long prefill that keeps moving is never cut off.
  std::chrono::milliseconds request_timeout{std::chrono::minutes(10)};
  // Session affinity (GenerationOptions.session_id): a session stays on its
  // worker while that worker's load is at most guard_ratio × (least load of
  // the candidates + 1) + guard_slack requests (the prefix policy's guard;
  // router options prefix_guard_ratio / prefix_guard_slack).
  double session_guard_ratio = 2.0;
  int32_t session_guard_slack = 4;
  // Disaggregated serving, when some workers have role prefill: a prompt
  // whose best decode-side worker would compute at least this many of its
  // tokens is computed on a prefill worker first, and the decode worker
  // fetches its pages from there.
  int32_t disagg_min_prompt_tokens = 256;
  // Above twice this many candidates, a decision weighs only the workers
  // holding part of the prompt, the session's worker and this many others
  // drawn at random (SampleCandidates); 0 weighs every candidate.
  int decision_sample = 64;
  // Logs each request's prompt and output text (RequestTextLog); off, logs
  // hold neither.
  bool log_request_text = false;
};

class RouterCore final : public InferenceCore {
 public:
  RouterCore(Registry* registry, std::unique_ptr<Policy> policy, RouterMetrics* metrics,
             RouterCoreOptions options);

  Status Generate(const v1::GenerateTextRequest& request,
                  const MessageCallback& on_message) override;
  Status Chat(const v1::ChatRequest& request, const MessageCallback& on_message) override;
  StatusOr<int64_t> CountChatTokens(const v1::ChatRequest& request) override;
  StatusOr<v1::ListModelsResponse> ListModels() override;
  // Generate and Chat calls in progress (a draining router waits for them).
  int active_requests() const { return active_.load(); }
  // Recent decisions and per-worker hits (the status page).
  const RoutingLog& routing_log() const { return log_; }
  StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) override;

  const Policy& policy() const { return *policy_; }

  // How an attempt ended (Relay): finished (well or with a final error), or failed
  // before its first token, so another worker may take it.
  struct AttemptEnd {
    Status status;
    bool retry = false;
    std::string retry_reason;  // the retry metric's label
  };

 private:
  class ActiveCall;
  struct RenderedChat {
    ModelSnapshot snap;
    std::string text;  // the rendered prompt
    std::vector<int32_t> tokens;
    // Cache breakpoints (ChatMessage.cache_ttl_seconds) as prompt prefixes.
    std::vector<v1::RetainPrefix> retain;
  };
  // What a chat request adds to the worker's GenerateRequest.
  struct ChatExtras {
    std::vector<int32_t> render_special_tokens;
    std::vector<v1::RetainPrefix> retain;
    std::string grammar;  // a forced tool call's (overrides the options')
  };
  // The model, and the prompt tokens of the request's conversation.
  StatusOr<RenderedChat> RenderChat(const v1::ChatRequest& request, bool find_breakpoints);
  // The decision's peer-fetch hint, if it has one.
  static std::optional<v1::PeerFetch> FetchHint(const Decision& d,
                                                const std::vector<WorkerView>& views,
                                                const std::vector<const Candidate*>& conns);
  // What Route knows of a request, for planning and relaying each attempt.
  struct RouteRequest {
    ModelGroup* group = nullptr;
    std::string request_id;
    int32_t n_prompt = 0;
    std::vector<BlockHash> hashes;
    int32_t max_cacheable_blocks = 0;
    const v1::GenerationOptions* options = nullptr;
    std::optional<v1::PeerFetch> prefilled;  // the pages a prefill worker holds
    std::chrono::steady_clock::time_point arrival;
  };
  // One attempt: the worker chosen, and what it is expected to hold.
  struct Plan {
    std::shared_ptr<WorkerClient> worker;
    int slot = 0;
    WorkerView view;
    Decision decision;
    int32_t predicted = 0;  // prompt tokens expected cached (or fetched) there
    std::optional<v1::PeerFetch> fetch;
    int32_t exact_blocks = 0;  // leading prompt blocks its own events say it holds
  };
  // Chooses the worker for an attempt among the healthy workers not yet
  // tried; nullopt when none is left. Reads the index and loads, changes
  // nothing.
  std::optional<Plan> PlanAttempt(const ModelSnapshot& snap, const WorkerSet& tried,
                                  const RouteRequest& r,
                                  const std::optional<SessionAffinity::Hint>& hint) const;
  // Sends `forward` to the leased worker and relays its stream to the client.
  AttemptEnd Relay(WorkerLease& lease, const Plan& plan, const v1::GenerateRequest& forward,
                   const RouteRequest& r, const MessageCallback& on_message);
  // Disaggregated serving (router/disaggregation.cc): computes the prompt of
  // `forward` on a prefill worker and returns where its pages are, or
  // nullopt when the request is served colocated (no prefill worker, a
  // short prompt, or the prefill failed).
  // Each prefill chunk goes to `on_message` as a progress message; when it
  // returns false the prefill is cancelled and *cancelled set.
  std::optional<v1::PeerFetch> PrefillElsewhere(const ModelSnapshot& snap,
                                                const std::vector<BlockHash>& hashes,
                                                int32_t max_cacheable_blocks,
                                                const v1::GenerateRequest& forward,
                                                const MessageCallback& on_message, bool* cancelled);
  Status Route(const ModelSnapshot& snapshot, std::vector<int32_t> tokens,
               const v1::GenerationOptions& options, std::string request_id,
               const MessageCallback& on_message, const ChatExtras& extras = {});

  Registry* registry_;
  std::unique_ptr<Policy> policy_;
  RouterMetrics* metrics_;
  RouterCoreOptions options_;
  std::atomic<uint64_t> next_id_{1};
  std::atomic<int> active_{0};
  StreamWatchdog watchdog_;
  // Mutable: a decision (PlanAttempt, const) moves idle sessions out of the
  // live sums as it reads them.
  mutable SessionAffinity sessions_;
  RoutingLog log_;
};

}  // namespace kvmesh::router
