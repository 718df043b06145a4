// Routing policies: given an immutable view of the candidate workers and of
// what each holds of the request's prefix, choose one. Policies are chosen by
// name (MakePolicy) and hold no references to the router; a policy may keep
// small state of its own (a round-robin cursor) and must be thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/block_hash.h"
#include "common/status.h"

namespace kvmesh::router {

// One candidate worker as the policy sees it.
struct WorkerView {
  int slot = 0;         // index in the model's worker table
  std::string_view id;  // valid for the life of the process (router/worker_load.h)
  int32_t running = 0;  // requests running on it (its last report)
  int32_t waiting = 0;  // requests queued on it
  int64_t queued_prefill_tokens = 0;
  // Prompt tokens this router's requests on it still have to compute
  // (until their first token): its queue as far as this router knows.
  int64_t prefill_inflight_tokens = 0;
  int32_t step_tokens = 0;          // prompt tokens it computes per step; 0 when unknown
  int32_t inflight = 0;             // requests this router has in flight to it now
  double prefill_tokens_per_s = 0;  // measured; 0 when unknown
  int64_t blocks_free = 0;
  int64_t blocks_total = 0;
  int64_t blocks_cached = 0;  // free blocks holding cached prefixes (cache pressure)
  // Prompt tokens of the live sessions this router last sent it (other than
  // the asking one): context they keep in its cache and will extend
  // (SessionAffinity::SessionTokens).
  int64_t session_tokens = 0;
  // How many live sessions those are: each will send it another turn.
  int64_t live_sessions = 0;
  int32_t cached_tokens = 0;  // prompt tokens it holds (prefix match × block size)
  // Of cached_tokens, those only in its host-RAM tier (copied back before use).
  int32_t host_cached_tokens = 0;
  double host_restore_tokens_per_s = 0;  // measured by the worker; 0 when unknown
  // Measured speed of its fetches of KV pages from peers; 0 when unknown.
  double peer_fetch_tokens_per_s = 0;
  // Of the blocks its cache stored lately, the share it had evicted shortly
  // before (Load.kv_refill_ratio): how hard the cache thrashes, 0..1.
  double refill_ratio = 0;

  // Requests on the worker as best known: its report or this router's own
  // count, whichever is larger (the report lags; other routers add load).
  int32_t load() const { return std::max(running + waiting, inflight); }
};

struct RoutingInput {
  int32_t prompt_tokens = 0;
  std::span<const WorkerView> workers;  // non-empty, healthy candidates
  // The prompt's full blocks, hashed as the workers hash them (model, cache
  // salt and tokens), and their size in tokens.
  std::span<const BlockHash> block_hashes;
  int32_t block_size = 0;
  // For a request of a named session that the policy places (a new session,
  // or one moving off its worker): the context a live session holds on its
  // worker, on average (SessionAffinity::MeanLiveTokens). The session's turns
  // to come will add about that much to the cache it is placed on. 0: no
  // session, or none live.
  int64_t session_growth_tokens = 0;
  // For the same requests: the tokens a live session's later turn adds to
  // its worker, on average (SessionAffinity::LiveSummary). 0: unknown.
  int64_t session_turn_tokens = 0;
};

struct Decision {
  int index = 0;       // into RoutingInput::workers
  std::string reason;  // metric label: prefix_hit, min_cost, load_guard, round_robin, least_load,
                       // peer_fetch, session (the router kept a session on its worker)…
  // Peer prefix fetch: the chosen worker first fetches prompt blocks
  // [fetch_first_block, fetch_end_block) from workers[fetch_from] (-1: no
  // fetch).
  int fetch_from = -1;
  int32_t fetch_first_block = 0;
  int32_t fetch_end_block = 0;
};

// Weights of the prefix policy (config keys prefix_*).
struct PrefixPolicyWeights {
  // Load expressed in prompt tokens per request already on the worker. A
  // running request costs a new one little (decodes share each step with the
  // new prefill); queued prompt tokens are counted separately and in full.
  double tokens_per_running_request = 32;
  // Prefill speed assumed when no candidate worker has reported one yet
  // (an unmeasured worker otherwise counts as fast as the fastest measured).
  double default_prefill_tokens_per_s = 2000;
  // Go to the least-loaded worker when the chosen one has more than
  // `guard_ratio` × (least load + 1) + `guard_slack` requests.
  double guard_ratio = 2.0;
  int32_t guard_slack = 4;
  // Price host-tier hits by the worker's restore speed; false treats them as
  // misses (as a router that cannot see a worker's RAM cache would).
  bool use_host_tier = true;
  // Prompt tokens that would evict cached prefixes on a worker (those past
  // its empty blocks) cost this many times again: under memory pressure a
  // miss placed on a full cache displaces work someone will redo.
  double displacement_weight = 1.0;
  // How much of a worker's cache its live sessions fill (their context over
  // the cache's size) counts as well: every uncached token evicts live
  // context in that proportion, times this (0: only the empty blocks count).
  double live_session_weight = 1.0;
  // A named session placed on a worker will add its turns to that cache: its
  // request's uncached tokens count with this times the live sessions' mean
  // context added (RoutingInput::session_growth_tokens), so that a session
  // goes where its life fits, not only its first request. Off (0) by
  // default: on four workers holding every tenant's short context it kept
  // agent sessions balanced (p90 TTFT 58 against 184 ms), but in the
  // simulator, where a tenant's long prefix is on few workers, it moved
  // sessions off the holders and raised p90 at 50% demand
  // (docs/benchmarks.md, "Agent sessions in the open loop").
  double session_growth_weight = 0.0;
  // A named session stays on the worker it is placed on, and so do the live
  // sessions already there: each of them will bring that worker another turn
  // (RoutingInput::session_turn_tokens) while the new session's turns come.
  // Placing a session counts this times those turns, live_sessions ×
  // session_turn_tokens, as work ahead of it (at the candidates' median
  // speed): sessions spread by count as their turns will load the workers,
  // which the queues of the moment do not show (most live sessions are
  // between turns). A long prefix outweighs it until its holder carries
  // many more sessions than the others. Only while the candidates' live
  // sessions fit their caches, as for refill_weight (docs/benchmarks.md,
  // "Live sessions priced as load"). 0: off.
  double session_load_weight = 1.0;
  // A cache that refills a share r of what it stores (its worker measures
  // r) thrashes: each token evicted there is recomputed and evicts another,
  // about 1 / (1 - r) times in all, which a fast worker's speed hides.
  // While the candidates' live sessions (known by session id) fit their
  // caches, a worker's displaced tokens count 1 + refill_weight × (1 -
  // median speed / its speed)⁺ × (r - r₀)⁺ / (1 - r) times, r₀ the
  // candidates' median r; r is taken at most max_refill_ratio
  // (refill_weight 0: refills count like any displacement).
  double refill_weight = 1.0;
  double max_refill_ratio = 0.8;
  // Peer prefix fetch: a worker may fetch the prompt blocks it lacks from
  // the worker holding the most of them instead of computing them, when
  // that is cheaper. A fetch costs fetch_overhead_seconds, plus its tokens
  // at the fetching worker's measured fetch speed (default_fetch_tokens_per_s
  // before it has one), plus the holder's current step (its queued prefill,
  // up to one step's tokens, at its prefill speed), during which it cannot
  // read the pages out.
  bool peer_fetch = false;
  double default_fetch_tokens_per_s = 50000;
  double fetch_overhead_seconds = 0.005;
  // A worker's step in prompt tokens when it does not report one (workers
  // report their max_tokens_per_step in Load): a fetch waits behind the
  // holder's step, and a request mostly cached on a worker is admitted
  // there after about one step.
  int32_t fetch_holder_step_tokens = 512;
};

// Knobs of the approx_prefix policy (config keys approx_prefix_*).
struct ApproxPrefixPolicyOptions {
  // Route to the worker with the longest remembered prefix when it covers at
  // least this fraction of the prompt.
  double match_threshold = 0.5;
  // Load counts as imbalanced, and the least-loaded worker takes the request,
  // when the busiest has more than this many requests over the least busy...
  int32_t balance_abs_threshold = 32;
  // ...and more than this many times as many.
  double balance_rel_threshold = 1.0001;
  // Prompt tokens remembered per worker; the least recently routed are
  // forgotten past it.
  int64_t max_tokens_per_worker = 1 << 20;
};

class Policy {
 public:
  virtual ~Policy() = default;
  virtual std::string_view name() const = 0;
  virtual Decision Choose(const RoutingInput& input) = 0;
};

std::unique_ptr<Policy> MakeRoundRobinPolicy();
std::unique_ptr<Policy> MakeLeastLoadPolicy();
std::unique_ptr<Policy> MakePrefixPolicy(const PrefixPolicyWeights& weights);
std::unique_ptr<Policy> MakeApproxPrefixPolicy(const ApproxPrefixPolicyOptions& options);

// "round_robin", "least_load", "prefix" or "approx_prefix"; InvalidArgument
// listing them otherwise.
StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                             const PrefixPolicyWeights& weights = {},
                                             const ApproxPrefixPolicyOptions& approx = {});
std::vector<std::string> PolicyNames();

}  // namespace kvmesh::router
