// Agent-like traffic through a kvmesh-router: N sessions × M turns. Every
// session starts with its tenant's system prefix (one tenant unless
// --tenants says more), then each turn appends a user message and the
// model's reply, so prompts grow and share prefixes — the traffic
// prefix-aware routing is for. Session s belongs to tenant s mod T, so all
// tenants are active at once and equally busy. With --tenant-order random
// each session's tenant is drawn uniformly instead, as users of many
// tenants arrive in no order: sessions that start in turn through the
// tenants line up with a round-robin router's turn through the workers,
// which then keeps each tenant on the same workers by chance. With
// --tenant-skew S > 0 it is drawn with weight 1/(k+1)^S for tenant k
// (Zipf), as a few tenants of a real service are far busier than the
// rest. The draws are the same for every run of one --seed.
//
//   build/bench/router_sessions --router 127.0.0.1:50050[,HOST:PORT…] [--sessions 16] [--turns 6]
//       [--concurrency 4] [--system-tokens 256] [--user-tokens 48] [--reply-tokens 32]
//       [--tenants 1] [--tenant-order cycle|random] [--tenant-skew 0] [--rate 0]
//       [--trace FILE] [--session-ids 0|1]
//       [--fleet-kv-tokens 0] [--worker-kv-tokens 0] [--think-ms 0]
//       [--arrivals fixed|poisson] [--seed 0]
//
// --think-ms T pauses T ms between a reply and the session's next turn, as
// an agent runs its tools or a user reads: the session's context waits in
// a cache meanwhile, so at the same request rate more sessions are live and
// the KV demand is higher.
// --session-ids 1 names each session in its requests (session_id, as an
// agent's X-Claude-Code-Session-Id or an OpenAI prompt_cache_key does), so
// the router keeps it on its worker and counts its context as live there.
//
// Closed loop by default: --concurrency sessions at a time, each next one
// starting when one ends. With --rate R (requests per second), open loop:
// sessions start at a fixed pace of R / turns per second whatever the
// cluster does, as users would, so a policy that serves less than R
// requests per second builds a queue that grows for the whole run (the
// regime where routing decides TTFT).
// --arrivals poisson makes the open loop random, as many independent users
// are: the gaps between session starts are exponential with the same mean
// (turns / R seconds) and each pause between turns is exponential with mean
// --think-ms, drawn from fixed seeds, so every run and every policy sees the
// same draws. The fixed pace (the default) sends perfectly regular,
// identical sessions, which placing each new session on the next worker in
// turn spreads exactly evenly; random traffic does not stay that even.
// --seed N draws other traffic of the same shape (tokens, tenants, starts
// and pauses): one draw's p90 can differ from another's by more than two
// policies differ (docs/benchmarks.md), so compare policies over several.
//
// Reports the prompt tokens served from cache (worker-reported) and, beside
// them, the most any cache could have served: the prompt tokens, in whole
// 16-token blocks and leaving a prompt's last token to compute as a worker
// does, that an unbounded cache shared by every worker would have held when
// the request was sent (every earlier request's prompt, and the reply of
// each that had finished). A policy at that bound gets every reusable token;
// a cache's capacity keeps it below, and so do prompts sharing a prefix
// that run at once (each counts as held from when it is sent).
//
// With --fleet-kv-tokens N (the KV tokens of all the workers together, host
// tiers included, in 16-token blocks), also the capacity bound: the most a
// fleet of N tokens of cache could have served of the same traffic, each
// block kept or dropped knowing the future (bench/capacity_bound.h), an
// upper bound on any routing and eviction policy there that serves
// requests in the order they were sent. With --worker-kv-tokens N (each
// worker's KV tokens, equal caches, host tiers included), also the
// placement bound: the same optimum for each worker's own cache over the
// requests this run's router sent it, the most those placements allowed
// (not a bound where workers fetch pages from peers, which brings blocks
// no request sent them offered). The capacity bound less the placement
// bound is what placement cost; the placement bound less the hit ratio
// what the workers' eviction cost, with the overlap of requests in flight.
// Beside them, the LRU replay: what a least-recently-used cache of that
// size (bench/scale_sim's model of a worker) would have served of the same
// requests, in the order they were sent and their replies stored. Where it
// equals the hit ratio the workers evicted as that model does.
//
// Then the sessions in flight (their mean over the run and the most at
// once) and the KV they held on average: each tenant's context once and
// each live session's own turns, over the fleet's KV with
// --fleet-kv-tokens. In the open loop that is the KV demand the run
// reached, which grows where a policy's fleet falls behind. Then time to
// first token (mean, p50, p90, measured by the client), requests per
// second and per worker. Last line: one JSON object
// (capacity_bound -1 without --fleet-kv-tokens, placement_bound and
// lru_replay -1 without --worker-kv-tokens). --trace FILE writes one line per request
// (tab-separated: seconds since the start when it was sent, session,
// tenant, turn, worker, prompt tokens, cached tokens, TTFT ms), to follow
// where each tenant's requests went over a run.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <list>
#include <map>
#include <mutex>
#include <numeric>
#include <random>
#include <set>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "bench/capacity_bound.h"
#include "common/block_hash.h"
#include "kvmesh/v1/inference.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

std::vector<int32_t> Random(std::mt19937& rng, int n) {
  std::vector<int32_t> out(n);
  for (int32_t& t : out) t = 260 + static_cast<int32_t>(rng() % 250);
  return out;
}

// Both bounds count 16-token blocks, the workers' default block size.
constexpr size_t kBlock = 16;

// The whole 16-token blocks of `tokens`, hashed as a worker does.
std::vector<kvmesh::BlockHash> Blocks(std::span<const int32_t> tokens) {
  return kvmesh::HashFullBlocks(kvmesh::RootHash("router_sessions"), tokens,
                                static_cast<int>(kBlock));
}

// Blocks of a prompt a worker could serve from cache: it computes at least
// the last token.
size_t ReusableBlocks(const std::vector<int32_t>& prompt) {
  return prompt.empty() ? 0 : (prompt.size() - 1) / kBlock;
}

// An unbounded cache of 16-token blocks, keyed by the chained block hashes
// workers use (common/block_hash.h), for the reuse bound.
class UnboundedCache {
 public:
  // Prompt tokens this cache would serve: its leading whole blocks, at most
  // (size - 1) / 16 of them, since a worker computes at least the last token.
  int64_t Match(const std::vector<int32_t>& tokens) const {
    const size_t most = ReusableBlocks(tokens);
    kvmesh::BlockHash h = kvmesh::RootHash("router_sessions");
    size_t blocks = 0;
    for (; blocks < most; ++blocks) {
      h = kvmesh::ChainBlockHash(h, std::span(tokens).subspan(blocks * kBlock, kBlock));
      if (!held_.contains(h)) break;
    }
    return static_cast<int64_t>(blocks * kBlock);
  }

  // Holds the whole blocks of the first `n` tokens.
  void Add(const std::vector<int32_t>& tokens, size_t n) {
    for (const kvmesh::BlockHash& h : Blocks(std::span(tokens).first(n))) held_.insert(h);
  }

 private:
  absl::flat_hash_set<kvmesh::BlockHash, kvmesh::BlockHashHasher> held_;
};

// A worker's cache as bench/scale_sim models it (bench/sim_worker_cache.h):
// blocks kept least recently used first, a request's blocks going back
// with its first block the most recent (its last is evicted first). What it
// serves of the requests a run sent a worker, set beside what the worker
// served, tells whether the worker evicts as the simulator's model does.
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity) {}

  // Leading blocks of `blocks` held, at most `most`.
  size_t Held(const std::vector<kvmesh::BlockHash>& blocks, size_t most) const {
    size_t n = 0;
    while (n < std::min(most, blocks.size()) && where_.contains(blocks[n])) ++n;
    return n;
  }
  // Stores or refreshes `blocks`, the first the most recent; then evicts the
  // least recent beyond the capacity.
  void Use(const std::vector<kvmesh::BlockHash>& blocks) {
    for (auto b = blocks.rbegin(); b != blocks.rend(); ++b) {
      auto it = where_.find(*b);
      if (it != where_.end()) order_.erase(it->second);
      order_.push_back(*b);
      where_[*b] = std::prev(order_.end());
    }
    while (order_.size() > capacity_) {
      where_.erase(order_.front());
      order_.pop_front();
    }
  }

 private:
  size_t capacity_;
  std::list<kvmesh::BlockHash> order_;  // least recent first
  absl::flat_hash_map<kvmesh::BlockHash, std::list<kvmesh::BlockHash>::iterator,
                      kvmesh::BlockHashHasher>
      where_;
};

}  // namespace

int main(int argc, char** argv) {
  std::string router = "127.0.0.1:50050";
  int sessions = 16, turns = 6, concurrency = 4, system_tokens = 256, user_tokens = 48,
      reply_tokens = 32, tenants = 1;
  double rate = 0, skew = 0, think_ms = 0;
  int64_t fleet_kv_tokens = 0, worker_kv_tokens = 0;
  bool session_ids = false;
  uint32_t seed = 0;
  std::string trace_path, arrivals = "fixed", tenant_order = "cycle";
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--router")
      router = argv[i + 1];
    else if (a == "--sessions")
      sessions = v;
    else if (a == "--turns")
      turns = v;
    else if (a == "--concurrency")
      concurrency = v;
    else if (a == "--system-tokens")
      system_tokens = v;
    else if (a == "--user-tokens")
      user_tokens = v;
    else if (a == "--reply-tokens")
      reply_tokens = v;
    else if (a == "--tenants")
      tenants = std::max(1, v);
    else if (a == "--rate")
      rate = std::atof(argv[i + 1]);
    else if (a == "--think-ms")
      think_ms = std::atof(argv[i + 1]);
    else if (a == "--tenant-skew")
      skew = std::atof(argv[i + 1]);
    else if (a == "--tenant-order")
      tenant_order = argv[i + 1];
    else if (a == "--trace")
      trace_path = argv[i + 1];
    else if (a == "--session-ids")
      session_ids = v != 0;
    else if (a == "--fleet-kv-tokens")
      fleet_kv_tokens = std::atoll(argv[i + 1]);
    else if (a == "--worker-kv-tokens")
      worker_kv_tokens = std::atoll(argv[i + 1]);
    else if (a == "--arrivals")
      arrivals = argv[i + 1];
    else if (a == "--seed")
      seed = static_cast<uint32_t>(std::strtoul(argv[i + 1], nullptr, 10));
    else {
      std::fprintf(stderr,
                   "router_sessions: unknown option '%s' (the options are listed at the top of "
                   "bench/router_sessions.cc)\n",
                   a.c_str());
      return 2;
    }
  }
  if (argc % 2 == 0) {
    std::fprintf(stderr, "router_sessions: option '%s' needs a value\n", argv[argc - 1]);
    return 2;
  }
  if (arrivals != "fixed" && arrivals != "poisson") {
    std::fprintf(stderr, "router_sessions: --arrivals must be fixed or poisson, not '%s'\n",
                 arrivals.c_str());
    return 2;
  }
  const bool poisson = arrivals == "poisson";
  std::FILE* trace = nullptr;
  if (!trace_path.empty() && (trace = std::fopen(trace_path.c_str(), "w")) == nullptr) {
    std::fprintf(stderr, "router_sessions: cannot write --trace %s\n", trace_path.c_str());
    return 2;
  }
  if (tenant_order != "cycle" && tenant_order != "random") {
    std::fprintf(stderr, "router_sessions: --tenant-order must be cycle or random, not '%s'\n",
                 tenant_order.c_str());
    return 2;
  }
  if (!(skew >= 0)) {
    std::fprintf(stderr, "router_sessions: --tenant-skew must be >= 0\n");
    return 2;
  }
  if (!(think_ms >= 0)) {
    std::fprintf(stderr, "router_sessions: --think-ms must be >= 0\n");
    return 2;
  }
  // Several routers (comma-separated): turn t of session s goes through
  // router (s + t) mod R, as requests behind a load balancer (a Kubernetes
  // Service over the router replicas) land on any replica.
  std::vector<std::unique_ptr<kvmesh::v1::Inference::Stub>> stubs;
  for (size_t at = 0; at <= router.size();) {
    const size_t comma = std::min(router.find(',', at), router.size());
    stubs.push_back(kvmesh::v1::Inference::NewStub(
        grpc::CreateChannel(router.substr(at, comma - at), grpc::InsecureChannelCredentials())));
    at = comma + 1;
  }
  // Every draw's seed, moved by --seed (0: the draws of earlier runs).
  const auto seeded = [&](uint32_t base) { return std::mt19937(base + 1000003u * seed); };
  std::mt19937 seed_rng = seeded(2024);
  std::vector<std::vector<int32_t>> systems;
  for (int t = 0; t < tenants; ++t) systems.push_back(Random(seed_rng, system_tokens));
  std::vector<int> tenant_of(sessions);
  std::vector<double> popularity(tenants);
  for (int t = 0; t < tenants; ++t) popularity[t] = 1.0 / std::pow(t + 1.0, skew);
  std::discrete_distribution<int> draw(popularity.begin(), popularity.end());
  std::mt19937 tenant_rng = seeded(7);
  std::uniform_int_distribution<int> uniform(0, tenants - 1);
  for (int s = 0; s < sessions; ++s) {
    tenant_of[s] = skew > 0                   ? draw(tenant_rng)
                   : tenant_order == "random" ? uniform(tenant_rng)
                                              : s % tenants;
  }

  std::mutex mu;
  std::vector<double> ttfts;
  std::map<std::string, int> per_worker;
  int64_t prompt_total = 0, cached_total = 0, bound_total = 0;
  UnboundedCache unbounded;
  // What each request offered and reused, in the order sent, and the
  // worker that served it, for the capacity and placement bounds.
  struct Offer {
    std::vector<kvmesh::BlockHash> blocks;
    size_t reusable = 0;  // 0: a finished reply's blocks
    int64_t request = 0;
  };
  const bool bounds = fleet_kv_tokens > 0 || worker_kv_tokens > 0;
  std::vector<Offer> offers;
  // By request: the worker it reached ("" if none answered) and whether it
  // was served; one that failed reuses nothing, though its worker may have
  // computed its prompt.
  std::vector<std::string> worker_of;
  std::vector<bool> served;
  // By turn: prompt and cached tokens, and turns after the first that went
  // to the previous turn's worker.
  std::vector<int64_t> turn_prompt(turns, 0), turn_cached(turns, 0);
  int64_t stayed = 0, later_turns = 0;
  int failures = 0;
  std::atomic<int> next_session{0};
  // Sessions in flight: the most at once, and over time (session-seconds,
  // and the seconds times tokens each held beyond its tenant's context).
  int in_flight = 0, peak_in_flight = 0;
  double session_seconds = 0, own_token_seconds = 0;
  const auto start = Clock::now();
  // One session: its turns, one after the other.
  auto run_session = [&](int s) {
    std::mt19937 rng = seeded(100 + s);
    // The pauses draw from their own seed, so the tokens stay those of a
    // fixed-pace run.
    std::mt19937 pause_rng = seeded(50000 + s);
    std::exponential_distribution<double> pause(think_ms > 0 ? 1.0 / think_ms : 1.0);
    std::vector<int32_t> history = {1};
    const std::vector<int32_t>& system = systems[tenant_of[s]];
    history.insert(history.end(), system.begin(), system.end());
    const size_t context = history.size();
    auto held_since = Clock::now();
    double own = 0;  // token-seconds of the session's own turns
    // Counts the tokens held since the last call, then the history's now.
    auto hold = [&] {
      const auto now = Clock::now();
      own += (history.size() - context) * std::chrono::duration<double>(now - held_since).count();
      held_since = now;
    };
    const auto session_start = held_since;
    {
      std::lock_guard<std::mutex> lock(mu);
      peak_in_flight = std::max(peak_in_flight, ++in_flight);
    }
    std::string previous;
    for (int t = 0; t < turns; ++t) {
      if (t > 0 && think_ms > 0) {
        const double ms = poisson ? pause(pause_rng) : think_ms;
        std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
      }
      const auto user = Random(rng, user_tokens);
      hold();
      history.insert(history.end(), user.begin(), user.end());
      kvmesh::v1::Inference::Stub* stub = stubs[(s + t) % stubs.size()].get();
      kvmesh::v1::GenerateTextRequest req;
      req.mutable_prompt_tokens()->Assign(history.begin(), history.end());
      req.mutable_options()->set_max_tokens(reply_tokens);
      req.mutable_options()->set_ignore_eos(true);
      req.mutable_options()->mutable_sampling()->set_temperature(0);
      if (session_ids) req.mutable_options()->set_session_id("session-" + std::to_string(s));
      int64_t bound = 0, request = -1;
      {
        std::lock_guard<std::mutex> lock(mu);
        bound = unbounded.Match(history);
        unbounded.Add(history, history.size());
        if (bounds) {
          request = static_cast<int64_t>(served.size());
          worker_of.emplace_back();
          served.push_back(false);
          offers.push_back({Blocks(history), ReusableBlocks(history), request});
        }
      }
      grpc::ClientContext ctx;
      const auto t0 = Clock::now();
      auto reader = stub->Generate(&ctx, req);
      kvmesh::v1::GenerateTextResponse m, last;
      double ttft = -1;
      std::string worker;
      std::vector<int32_t> reply;
      while (reader->Read(&m)) {
        if (ttft < 0 && m.tokens_size() > 0) {
          ttft = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
        }
        reply.insert(reply.end(), m.tokens().begin(), m.tokens().end());
        if (!m.worker().empty()) worker = m.worker();
        last = m;
      }
      const bool ok = reader->Finish().ok();
      std::lock_guard<std::mutex> lock(mu);
      if (request >= 0) worker_of[request] = worker;
      if (!ok) {
        ++failures;
        break;
      }
      ttfts.push_back(ttft);
      bound_total += bound;
      if (trace) {
        std::fprintf(trace, "%.4f\t%d\t%d\t%d\t%s\t%d\t%d\t%.2f\n",
                     std::chrono::duration<double>(t0 - start).count(), s, tenant_of[s], t,
                     worker.c_str(), last.usage().prompt_tokens(), last.usage().cached_tokens(),
                     ttft);
      }
      ++per_worker[worker];
      prompt_total += last.usage().prompt_tokens();
      cached_total += last.usage().cached_tokens();
      turn_prompt[t] += last.usage().prompt_tokens();
      turn_cached[t] += last.usage().cached_tokens();
      if (t > 0) {
        ++later_turns;
        stayed += worker == previous;
      }
      previous = worker;
      hold();
      history.insert(history.end(), reply.begin(), reply.end());
      // The reply's last token is never fed back, so its KV is not computed.
      if (!history.empty()) {
        unbounded.Add(history, history.size() - 1);
        if (bounds) {
          served[request] = true;
          offers.push_back({Blocks(std::span(history).first(history.size() - 1)), 0, request});
        }
      }
    }
    hold();
    std::lock_guard<std::mutex> lock(mu);
    --in_flight;
    session_seconds += std::chrono::duration<double>(Clock::now() - session_start).count();
    own_token_seconds += own;
  };
  std::vector<std::thread> threads;
  if (rate > 0) {
    // Open loop: session s starts at s × turns / rate seconds, or after
    // exponential gaps of that mean.
    std::mt19937 arrival_rng = seeded(31337);
    std::exponential_distribution<double> gap(rate / turns);
    double at = 0;
    for (int s = 0; s < sessions; ++s) {
      if (s > 0) at = poisson ? at + gap(arrival_rng) : s * turns / rate;
      std::this_thread::sleep_until(start + std::chrono::duration<double>(at));
      threads.emplace_back(run_session, s);
    }
  } else {
    for (int c = 0; c < concurrency; ++c) {
      threads.emplace_back([&] {
        for (int s; (s = next_session++) < sessions;) run_session(s);
      });
    }
  }
  for (auto& t : threads) t.join();
  if (trace) std::fclose(trace);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(ttfts.begin(), ttfts.end());
  const double mean =
      ttfts.empty() ? 0 : std::accumulate(ttfts.begin(), ttfts.end(), 0.0) / ttfts.size();
  auto quantile = [&](double q) {
    return ttfts.empty() ? 0 : ttfts[static_cast<size_t>(q * (ttfts.size() - 1))];
  };
  const double p50 = quantile(0.5), p90 = quantile(0.9);
  // The capacity bound: one cache of the fleet's size over every request
  // (one that failed reuses nothing). The placement bound: each worker's
  // cache over the requests it served.
  using Bound = kvmesh::bench::CapacityBound<kvmesh::BlockHash, kvmesh::BlockHashHasher>;
  auto solve = [&](int64_t tokens, const std::string& worker) {
    Bound b(tokens / static_cast<int64_t>(kBlock));
    for (const Offer& o : offers) {
      if (!worker.empty() && worker_of[o.request] != worker) continue;
      if (o.reusable == 0) {
        b.Stored(o.blocks);
      } else {
        b.Request(o.blocks, served[o.request] ? o.reusable : 0);
      }
    }
    int64_t tokens_hit = 0;
    for (int64_t hits : b.Solve()) tokens_hit += hits * static_cast<int64_t>(kBlock);
    return tokens_hit;
  };
  const int64_t capacity_total = fleet_kv_tokens > 0 ? solve(fleet_kv_tokens, "") : 0;
  int64_t placement_total = 0;
  if (worker_kv_tokens > 0) {
    for (const auto& [w, n] : per_worker) {
      if (!w.empty()) placement_total += solve(worker_kv_tokens, w);
    }
  }
  // The LRU replay: each worker's requests, in the order they were sent and
  // their replies stored, through an LruCache of the worker's size.
  int64_t lru_total = 0;
  if (worker_kv_tokens > 0) {
    std::map<std::string, LruCache> lru;
    for (const Offer& o : offers) {
      const std::string& w = worker_of[o.request];
      if (w.empty()) continue;
      LruCache& cache =
          lru.try_emplace(w, static_cast<size_t>(worker_kv_tokens) / kBlock).first->second;
      if (o.reusable > 0 && served[o.request]) {
        lru_total += static_cast<int64_t>(cache.Held(o.blocks, o.reusable) * kBlock);
      }
      cache.Use(o.blocks);
    }
  }
  const double requests_per_s = ttfts.size() / std::max(seconds, 1e-9);
  int max_load = 0, min_load = per_worker.empty() ? 0 : 1 << 30;
  for (auto& [w, n] : per_worker) {
    max_load = std::max(max_load, n);
    min_load = std::min(min_load, n);
  }
  std::printf("%d sessions x %d turns (%zu requests, %d failed) in %.1f s\n", sessions, turns,
              ttfts.size(), failures, seconds);
  std::printf("cached prompt tokens: %lld / %lld = %.1f%%\n", static_cast<long long>(cached_total),
              static_cast<long long>(prompt_total),
              100.0 * cached_total / std::max<int64_t>(1, prompt_total));
  std::printf("most an unbounded cache could serve: %lld = %.1f%%\n",
              static_cast<long long>(bound_total),
              100.0 * bound_total / std::max<int64_t>(1, prompt_total));
  if (fleet_kv_tokens > 0) {
    std::printf("most a cache of the fleet's %lld tokens could serve: %lld = %.1f%%\n",
                static_cast<long long>(fleet_kv_tokens), static_cast<long long>(capacity_total),
                100.0 * capacity_total / std::max<int64_t>(1, prompt_total));
  }
  if (worker_kv_tokens > 0) {
    std::printf("most caches of %lld tokens could serve where each request went: %lld = %.1f%%\n",
                static_cast<long long>(worker_kv_tokens), static_cast<long long>(placement_total),
                100.0 * placement_total / std::max<int64_t>(1, prompt_total));
    std::printf("least-recently-used caches of %lld tokens over the same requests: %lld = %.1f%%\n",
                static_cast<long long>(worker_kv_tokens), static_cast<long long>(lru_total),
                100.0 * lru_total / std::max<int64_t>(1, prompt_total));
  }
  std::printf("cached by turn:");
  for (int t = 0; t < turns; ++t) {
    std::printf(" %d: %.1f%%", t + 1,
                100.0 * turn_cached[t] / std::max<int64_t>(1, turn_prompt[t]));
  }
  std::printf("; later turns on the previous turn's worker: %.1f%%\n",
              100.0 * stayed / std::max<int64_t>(1, later_turns));
  // The KV the live sessions held on average: each tenant's context once,
  // and each session's own turns for as long as it was live.
  const double mean_in_flight = session_seconds / std::max(seconds, 1e-9);
  const size_t tenants_used = std::set<int>(tenant_of.begin(), tenant_of.end()).size();
  const double live_tokens = static_cast<double>(tenants_used) * system_tokens +
                             own_token_seconds / std::max(seconds, 1e-9);
  std::printf("sessions in flight: mean %.1f, peak %d; KV they held: %.0f tokens on average",
              mean_in_flight, peak_in_flight, live_tokens);
  if (fleet_kv_tokens > 0) {
    std::printf(" = %.0f%% of the fleet's", 100.0 * live_tokens / fleet_kv_tokens);
  }
  std::printf("\n");
  std::printf("time to first token: mean %.1f ms, p50 %.1f ms, p90 %.1f ms\n", mean, p50, p90);
  std::printf("requests per second: %.2f\n", requests_per_s);
  std::printf("requests per worker:");
  for (auto& [w, n] : per_worker) std::printf(" %s=%d", w.c_str(), n);
  std::printf(" (max/min %d/%d)\n", max_load, min_load);
  std::printf(
      "{\"hit_ratio\":%.4f,\"hit_bound\":%.4f,\"capacity_bound\":%.4f,\"placement_bound\":%.4f,"
      "\"ttft_mean_ms\":%.2f,"
      "\"ttft_p50_ms\":%.2f,"
      "\"ttft_p90_ms\":%.2f,"
      "\"requests_per_s\":%.3f,\"max_load\":%d,\"min_load\":%d,\"seconds\":%.2f,"
      "\"failures\":%d,\"sessions_in_flight_mean\":%.2f,\"sessions_in_flight_peak\":%d,"
      "\"kv_demand\":%.4f,\"lru_replay\":%.4f}\n",
      static_cast<double>(cached_total) / std::max<int64_t>(1, prompt_total),
      static_cast<double>(bound_total) / std::max<int64_t>(1, prompt_total),
      fleet_kv_tokens > 0 ? static_cast<double>(capacity_total) / std::max<int64_t>(1, prompt_total)
                          : -1.0,
      worker_kv_tokens > 0
          ? static_cast<double>(placement_total) / std::max<int64_t>(1, prompt_total)
          : -1.0,
      mean, p50, p90, requests_per_s, max_load, min_load, seconds, failures, mean_in_flight,
      peak_in_flight, fleet_kv_tokens > 0 ? live_tokens / fleet_kv_tokens : -1.0,
      worker_kv_tokens > 0 ? static_cast<double>(lru_total) / std::max<int64_t>(1, prompt_total)
                           : -1.0);
  return failures == 0 ? 0 : 1;
}
