// prefix: price each worker by the time the request would take to start
// there, and take the cheapest — unless load is too uneven.
//
//   cost(w) = (prompt tokens not cached on w
//              + prefill tokens queued on w ahead of the request
//              + tokens_per_running_request × requests on w) / prefill speed of w
//             + displacement_weight × cached tokens it would evict on w
//               / median prefill speed of the candidates
//             + prompt tokens in w's host tier / restore speed of w
//
// A worker admits the waiting request with the most cached tokens first, so
// how much of w's queue is ahead of the request depends on how much of it w
// holds: a request w holds entirely waits for about one step of w (its
// max_tokens_per_step), one w lacks entirely for the whole queue, and one
// in between for its uncached share of the queue plus its cached share of a
// step:
//
//   ahead(w) = cached share × min(queue, step) + (1 - cached share) × queue
//
// Pricing a returning session at the holder's whole queue (most of it other
// tenants' misses, which its turn overtakes) made the policy move sessions
// off busy holders near saturation; each move recomputes a context and
// evicts another, which tipped the cluster over (docs/benchmarks.md,
// "Routing under KV pressure").
//
// Uncached tokens past a worker's empty blocks evict cached prefixes there
// (which someone will recompute), so under memory pressure they count again,
// at the candidates' median prefill speed (the evicted prefix's next request
// may go anywhere; priced at this worker's own speed, a worker measured as
// fast drew every prefix no cache held until its cache thrashed):
// a tenant whose context was partly evicted stays with the worker that still
// holds part of it rather than moving to a full cache and displacing another
// tenant's. With room in the caches the term is 0.
//
// With peer fetch on, each worker has a third option for the prompt tokens
// it lacks but another worker (the holder, the one holding the most) has:
// fetch their pages from the holder instead of computing them. The fetch is
// priced as overhead + tokens / the worker's fetch speed + the holder's
// current step; the cheaper of fetching and computing is the worker's cost,
// and a decision that fetches carries the hint (reason peer_fetch).
//
// A cache too small for the sessions placed on it thrashes: its worker
// measures the share r of the blocks it stores that it had evicted within
// one turnover (Load.kv_refill_ratio). A token placed there evicts one
// that is recomputed and evicts another, about 1 / (1 - r) tokens in all.
// A worker's speed hides that: it computes its misses fast, so with its
// cache full it still looks cheap, and a worker three times as fast drew
// the sessions of a fleet at half its KV demand onto caches that could not
// hold them while slow workers sat with room (docs/scale.md, "Unequal
// speeds"). So a worker faster than the candidates' median speed has its
// displaced tokens count 1 + refill_weight × (1 - median speed / its speed)
// × (r - r₀) / (1 - r) times, r₀ being the candidates' median ratio: the
// part of the cascade its speed would hide. With equal speeds the
// live-session term alone keeps each cache's share. The term applies while
// the candidates' live sessions fit their caches; once they exceed them,
// some cache thrashes wherever a request goes, and it is left out (r₀ = 1),
// as it is without session ids, where the router knows no live sessions to
// tell whether they fit.
//
// A named session placed on a worker adds its turns to come to that cache.
// With session_growth_weight > 0 its request counts that much of the live
// sessions' mean context on top of its uncached tokens in what it would
// displace, so sessions go where their lives fit. It is off by default: it
// helps where every worker holds the tenants' contexts (sessions then
// balance by what they will hold) and hurts where a tenant's long prefix is
// on few workers (it moves sessions off the holders; docs/benchmarks.md,
// "Agent sessions in the open loop").
//
// Each live session on a worker will send it another turn, and a new named
// session placed there will queue behind those turns for its life: the live
// sessions' next turns (session_load_weight × live_sessions ×
// session_turn_tokens, a turn being what a session's prompt grows by) count
// as work ahead of the request, at the candidates' median speed. Sessions
// then spread by count, as round robin spreads them, where the queues of
// the moment show only the sessions mid-turn (most live ones are between
// turns). A short prefix gives way to that (it is computed once on the new
// worker); a long one outweighs it until its holder carries many more
// sessions than the others. Like the refill ratio, the term applies only
// while the candidates' live sessions fit their caches: past that, every
// placement evicts someone, and spreading sessions off the holders of long
// prefixes only multiplies their recomputes. Past capacity the simulator
// still puts it 0-8% behind on p90, from placements made while the fleet
// filled up (docs/benchmarks.md, "Live sessions priced as load");
// session_load_weight 0 turns it off.
//
// A host-tier hit is copied back rather than recomputed: cheaper than a miss
// by the ratio of the two measured speeds, dearer than a device hit. A worker
// that has not measured its restore speed has its host hits priced as misses.
//
// A worker that holds the prefix saves its prefill; a busy one costs its
// queue; a fast one divides both. Costs within 10% of the cheapest count as a
// tie (speeds are measured, so never exactly equal); ties go to the least
// loaded, then to a worker that needs no fetch, then to the worker holding
// the fewest cached blocks (so new
// prefixes spread over the workers' caches instead of piling onto one), then
// in turn. The guard: if the cheapest worker carries
// more than guard_ratio × (least load + 1) + guard_slack requests, one hot
// prefix is about to melt it, so the request goes to the least-loaded worker
// instead (which then starts caching that prefix too).
#include <algorithm>
#include <atomic>
#include <limits>
#include <tuple>
#include <vector>

#include "router/policies/policy.h"

namespace kvmesh::router {
namespace {

class PrefixPolicy final : public Policy {
 public:
  explicit PrefixPolicy(const PrefixPolicyWeights& w) : w_(w) {}
  std::string_view name() const override { return "prefix"; }

  Decision Choose(const RoutingInput& input) override {
    const auto& ws = input.workers;
    const int n = static_cast<int>(ws.size());
    std::vector<double> cost(n);
    std::vector<int32_t> hit(n);       // cached tokens counted as hits
    std::vector<int32_t> fetch(n, 0);  // tokens fetched from the holder instead
    std::vector<int32_t> fetch_start(n, 0);
    int holder = 0;
    for (int i = 1; i < n; ++i) {
      if (ws[i].cached_tokens > ws[holder].cached_tokens) holder = i;
    }
    double best_cost = std::numeric_limits<double>::infinity();
    int least = 0;
    // A worker that has not measured its prefill speed yet is assumed as fast
    // as the fastest one that has (workers of a model usually run on the same
    // hardware); otherwise a single measurement would attract every request.
    double fastest_known = 0;
    for (const WorkerView& v : ws) fastest_known = std::max(fastest_known, v.prefill_tokens_per_s);
    const double unknown_rate = fastest_known > 0 ? fastest_known : w_.default_prefill_tokens_per_s;
    const auto speed = [&](const WorkerView& v) {
      return v.prefill_tokens_per_s > 0 ? v.prefill_tokens_per_s : unknown_rate;
    };
    // The speed at which what a request evicts is priced, and the refill
    // ratio past which a cache counts as thrashing (see the top): the
    // candidates' medians. The ratio counts only while their live sessions
    // fit their caches, not once they do not (some cache must thrash then,
    // wherever the request goes) nor when no session is known (traffic
    // without session ids, where the router cannot tell).
    std::vector<double> rates(n), refills(n);
    double live_sum = 0, capacity_sum = 0;
    for (int i = 0; i < n; ++i) {
      rates[i] = speed(ws[i]);
      refills[i] = ws[i].refill_ratio;
      live_sum += static_cast<double>(ws[i].session_tokens);
      capacity_sum += static_cast<double>(ws[i].blocks_total) * input.block_size;
    }
    std::nth_element(rates.begin(), rates.begin() + n / 2, rates.end());
    const double fleet_rate = rates[n / 2];
    double fleet_refill = 1.0;
    const bool sessions_fit = live_sum > 0 && live_sum < capacity_sum;
    if (sessions_fit) {
      std::nth_element(refills.begin(), refills.begin() + n / 2, refills.end());
      fleet_refill = refills[n / 2];
    }
    for (int i = 0; i < n; ++i) {
      const WorkerView& v = ws[i];
      const double rate = speed(v);
      const bool price_host = w_.use_host_tier && v.host_restore_tokens_per_s > 0;
      const int32_t host = std::clamp(v.host_cached_tokens, 0, v.cached_tokens);
      const int32_t cached = price_host ? v.cached_tokens : v.cached_tokens - host;
      hit[i] = cached;
      const double uncached = std::max(0, input.prompt_tokens - cached);
      // Prompt tokens that would not fit the worker's empty blocks and so
      // evict cached prefixes, each likely recomputed later by someone.
      double displaced = 0;
      if (v.blocks_total > 0 && input.block_size > 0) {
        const double empty =
            static_cast<double>(std::max<int64_t>(0, v.blocks_free - v.blocks_cached)) *
            input.block_size;
        // Live sessions filling the cache: each token placed there evicts
        // one of theirs in proportion to how full they keep it, even where
        // blocks look empty now (a session between turns, a cache refilling).
        const double capacity = static_cast<double>(v.blocks_total) * input.block_size;
        const double live = w_.live_session_weight *
                            std::min(1.0, static_cast<double>(v.session_tokens) / capacity);
        // On a cache that thrashes, what is evicted is recomputed and evicts
        // again; the part of that its speed would hide counts (see the top).
        const double r = std::clamp(v.refill_ratio, 0.0, w_.max_refill_ratio);
        const double faster = std::max(0.0, 1 - fleet_rate / rate);
        const double cascade =
            1 + w_.refill_weight * faster * std::max(0.0, r - fleet_refill) / (1 - r);
        // A named session brings its turns to come as well (off by
        // default: see the top).
        const double brought =
            uncached + w_.session_growth_weight * static_cast<double>(input.session_growth_tokens);
        displaced = w_.displacement_weight * cascade *
                    std::max(std::max(0.0, brought - empty), brought * live);
      }
      // The report lags; this router's own requests may not be in it yet.
      const double queue =
          static_cast<double>(std::max(v.queued_prefill_tokens, v.prefill_inflight_tokens));
      const double step = v.step_tokens > 0 ? v.step_tokens : w_.fetch_holder_step_tokens;
      const double share =
          input.prompt_tokens > 0
              ? std::clamp(cached / static_cast<double>(input.prompt_tokens), 0.0, 1.0)
              : 0;
      const double ahead = share * std::min(queue, step) + (1 - share) * queue;
      // The turns this worker's live sessions will bring (named sessions).
      const double sessions_ahead =
          sessions_fit ? w_.session_load_weight * static_cast<double>(v.live_sessions) *
                             static_cast<double>(input.session_turn_tokens)
                       : 0.0;
      cost[i] = (uncached + ahead + w_.tokens_per_running_request * v.load()) / rate +
                (displaced + sessions_ahead) / fleet_rate +
                (price_host ? host / v.host_restore_tokens_per_s : 0.0);
      // A fetch starts after w's device blocks: the pages go to the device,
      // and a prefix is device blocks first, so w's host-tier blocks are
      // fetched too (instead of restored).
      const int32_t device = v.cached_tokens - host;
      const int32_t beyond = ws[holder].cached_tokens - cached;  // computed otherwise
      if (w_.peer_fetch && i != holder && input.block_size > 0 && beyond >= input.block_size) {
        const WorkerView& h = ws[holder];
        const double h_rate = speed(h);
        const double fetch_rate = v.peer_fetch_tokens_per_s > 0 ? v.peer_fetch_tokens_per_s
                                                                : w_.default_fetch_tokens_per_s;
        const int64_t h_step = h.step_tokens > 0 ? h.step_tokens : w_.fetch_holder_step_tokens;
        const double holder_step =
            static_cast<double>(std::min<int64_t>(h.queued_prefill_tokens, h_step)) / h_rate;
        const int32_t fetched = ws[holder].cached_tokens - device;
        const double fetch_seconds = w_.fetch_overhead_seconds + fetched / fetch_rate + holder_step;
        const double replaced =
            beyond / rate + (price_host ? host / v.host_restore_tokens_per_s : 0.0);
        if (fetch_seconds < replaced) {
          cost[i] += fetch_seconds - replaced;
          fetch_start[i] = device;
          fetch[i] = fetched;
        }
      }
      best_cost = std::min(best_cost, cost[i]);
      if (v.load() < ws[least].load()) least = i;
    }
    const int start = static_cast<int>(turn_.fetch_add(1, std::memory_order_relaxed) % n);
    int best = -1;
    for (int k = 0; k < n; ++k) {
      const int i = (start + k) % n;
      if (cost[i] > best_cost * 1.1 + 1e-9) continue;
      // Among equal loads, a worker that needs no fetch, then the emptier cache.
      const auto rank = [&](int j) {
        return std::make_tuple(ws[j].load(), fetch[j] > 0, ws[j].blocks_cached);
      };
      if (best < 0 || rank(i) < rank(best)) best = i;
    }
    const double limit = w_.guard_ratio * (ws[least].load() + 1) + w_.guard_slack;
    if (best != least && ws[best].load() > limit)
      return WithFetch({least, "load_guard"}, fetch_start, fetch, holder, input.block_size);
    if (fetch[best] > 0)
      return WithFetch({best, "peer_fetch"}, fetch_start, fetch, holder, input.block_size);
    return {best, hit[best] > 0 ? "prefix_hit" : "min_cost"};
  }

 private:
  // The decision, with the fetch hint of its worker when it has one.
  static Decision WithFetch(Decision d, const std::vector<int32_t>& start,
                            const std::vector<int32_t>& fetch, int holder, int32_t block_size) {
    if (fetch[d.index] > 0) {
      d.fetch_from = holder;
      d.fetch_first_block = start[d.index] / block_size;
      d.fetch_end_block = (start[d.index] + fetch[d.index]) / block_size;
    }
    return d;
  }

  PrefixPolicyWeights w_;
  std::atomic<uint64_t> turn_{0};
};

}  // namespace

std::unique_ptr<Policy> MakePrefixPolicy(const PrefixPolicyWeights& weights) {
  return std::make_unique<PrefixPolicy>(weights);
}

}  // namespace kvmesh::router
