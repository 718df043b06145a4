// A simulated cluster of 1,000 workers behind N routers under agent traffic,
// routed by the router's own code: each simulated router has its own prefix
// index (PrefixIndex, fed by the workers' KV events after a delivery lag, and
// by its own optimistic entries), its own session table (SessionAffinity),
// its own in-flight counts (WorkerLease) and load reports (a WorkerClient per
// worker), and decides as RouterCore::PlanAttempt does: Match,
// SampleCandidates, BuildWorkerViews, StickToSession, then the policy. Only
// the workers and the clients are modelled:
//   - a worker has a KV cache of --worker-blocks 16-token blocks (blocks of
//     running requests pinned, the rest kept least recently used first, a
//     request's last blocks evicted before its first; --eviction adaptive:
//     as workers with --kv-eviction adaptive), prefills one request
//     at a time at --prefill-tps tokens/s (cached blocks are free; a
//     --slow-share of the workers --slow-factor times slower; with
//     --shared-cores N the workers share N cores for their prefills, as
//     workers on one host do: with more prefilling than cores each goes at
//     its speed x N / prefilling, and reports the speed its last prefill
//     measured), and decodes every request at --decode-tps tokens/s each;
//     it admits the queued request holding the most cached blocks first
//     (of the first 16, as the worker's scheduler does); it batches its KV
//     events every --event-ms and they reach each router --lag-ms later,
//     each batch with the worker's load as it was sent (--load-with-events
//     1, as real workers do; 0: none), and it reports its load every
//     --report-ms;
//   - agents: --tenants tenants, each with a shared prefix (system prompt and
//     tools) of --prefix-tokens; sessions of --turns turns, each turn adding a
//     tool result of 500-2500 tokens and an answer of 100-700 (drawn
//     uniformly; --user-tokens and --reply-tokens set N or MIN,MAX), then a pause
//     (exponential, mean --think-s); a finished session is replaced by a new
//     one of the same tenant. The number of sessions is set by --demand, the
//     distinct KV their contexts need over the fleet's capacity (sessions
//     start mid-way, at a random turn). Each request goes to a router drawn
//     at random (a Service spreads connections; an agent's requests land on
//     any router). With --session-rate R the loop is open instead: new
//     sessions (of random tenants, from their first turn) start at R a
//     second whatever the fleet serves, and end after --turns turns, so a
//     slow fleet holds more sessions at once, as agents' users keep arriving
//     (the table's last column: the sessions live, on average over the phase). Agents
//     name their sessions (x-session-id) unless --session-ids 0.
// The timeline (simulated seconds): warm-up, then four phases of --phase-s:
// N routers; one router added (it first loads every worker's snapshot); the
// oldest router removed (it drains); a zone of --zones lost (its workers'
// queued requests are retried elsewhere, those decoding fail to the client,
// and routers drop the workers at their first failed call or after
// --detect-ms of failed load polls). Per phase it prints the
// hit-token ratio, what the fleet held of the prompts at decision time (the
// best any router could find), TTFT percentiles, retries and errors, the
// prefills that computed over half their prompt by where the rest of it was
// (PhaseStats::CountPrefill), and per router the event load (blocks/s,
// batches/s, wire bytes/s), the CPU its index spends ingesting (measured:
// the real PrefixIndex applying the events) and its decision time
// (measured).
//
//   build/bench/scale_sim [--workers 1000] [--routers 1,2,4] [--policy prefix]
//       [--demand 1.0 | --session-rate R] [--phase-s 60] [--warmup-s 90] [--seed 1] ...
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <deque>
#include <memory>
#include <optional>
#include <queue>
#include <random>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bench/sim_model.h"
#include "bench/sim_report.h"
#include "bench/sim_worker_cache.h"
#include "router/fake_worker_client.h"
#include "router/policies/policy.h"
#include "router/prefix_index.h"
#include "router/registry.h"
#include "router/session_affinity.h"
#include "router/worker_views.h"

namespace {

using kvmesh::BlockHash;
using namespace kvmesh::bench;
using namespace kvmesh::router;
using WallClock = std::chrono::steady_clock;

class Simulation {
 public:
  Simulation(const Options& o, int routers) : o_(o), rng_(o.seed), n_routers_(routers) {}

  void Run() {
    const bool open = o_.session_rate > 0;
    const int n_sessions = open ? 0 : o_.ClosedLoopSessions();
    PrintRunHeader(o_, n_routers_, n_sessions);
    if (open) Push(NextSessionGap(), Kind::kNewSession, 0);
    for (int w = 0; w < o_.workers; ++w) workers_.emplace_back(o_.worker_blocks, o_.eviction);
    for (int r = 0; r < n_routers_; ++r) AddRouter(false);
    for (int s = 0; s < n_sessions; ++s) {
      Session session;
      session.tenant = s % o_.tenants;
      session.uid = next_uid_++;
      // Sessions start mid-way (their history not cached anywhere yet).
      session.turn = static_cast<int>(rng_() % o_.turns);
      session.history = session.turn * static_cast<int64_t>(o_.MeanTurnTokens());
      sessions_.push_back(session);
      Push(Uniform(0, 10), Kind::kArrive, s);
    }
    Push(o_.event_ms / 1000, Kind::kFlush, 0);
    Push(0, Kind::kReport, 0);
    for (int p = 0; p <= 4; ++p) Push(o_.warmup_s + p * o_.phase_s, Kind::kPhase, p);
    while (!events_.empty()) {
      const Event e = events_.top();
      events_.pop();
      now_ = e.t;
      if (e.kind == Kind::kPhase && e.a == 4) {
        EndPhase();
        break;
      }
      Handle(e);
    }
    int64_t overflow = 0;
    for (const Worker& w : workers_) overflow += w.cache.overflow();
    PrintRouterTable(router_rows_, overflow, notes_);
  }

 private:
  void Push(double t, Kind kind, int64_t a, int64_t b = 0, int64_t c = 0) {
    events_.push({t, seq_++, kind, a, b, c});
  }
  double NextSessionGap() {
    return now_ + std::exponential_distribution<double>(o_.session_rate)(rng_);
  }
  double Uniform(double lo, double hi) {
    return lo + (hi - lo) * std::uniform_real_distribution<double>(0, 1)(rng_);
  }
  WallClock::time_point SimTime() const {
    return sim_epoch_ +
           std::chrono::duration_cast<WallClock::duration>(std::chrono::duration<double>(now_));
  }

  void AddRouter(bool from_snapshots) {
    auto r = std::make_unique<SimRouter>();
    r->group.reset(new ModelGroup{
        .name = "sim",
        .digest = "sim",
        .block_size = kBlockTokens,
        .tokenizer = nullptr,
        .chat_template = std::nullopt,
        .chat_template_error = {},
        .index = PrefixIndex(std::chrono::seconds(20), [this] { return SimTime(); })});
    auto policy = MakePolicy(o_.policy, o_.weights);
    if (!policy.ok()) {
      std::fprintf(stderr, "scale_sim: %s\n", policy.status().ToString().c_str());
      std::exit(2);
    }
    r->policy = std::move(policy).value();
    r->clients.resize(o_.workers);
    std::vector<Candidate> healthy;
    for (int w = 0; w < o_.workers; ++w) {
      auto client = std::make_shared<FakeWorkerClient>("10." + std::to_string(w % o_.zones) + "." +
                                                       std::to_string(w / 250) + "." +
                                                       std::to_string(w % 250) + ":50051");
      kvmesh::v1::InfoResponse info;
      info.set_worker_id("worker-" + std::to_string(w));
      client->set_info(info);
      r->clients[w] = client;
      r->group->SetSlot(w, client);
      if (!workers_[w].alive) continue;
      healthy.push_back({w, client});
      r->known.Add(w);
    }
    r->snap = ModelSnapshot(r->group.get(), std::move(healthy));
    if (from_snapshots) {
      // Subscribing: every worker's snapshot, then its deltas.
      int64_t blocks = 0;
      const auto t0 = WallClock::now();
      std::vector<BlockHash> hashes;
      for (int w = 0; w < o_.workers; ++w) {
        if (!workers_[w].alive) continue;
        hashes.clear();
        workers_[w].cache.ForEach([&](uint64_t k) { hashes.push_back(HashOf(k)); });
        r->group->index.AddExact(w, hashes);
        blocks += static_cast<int64_t>(hashes.size());
      }
      const double s = std::chrono::duration<double>(WallClock::now() - t0).count();
      notes_.push_back("t=" + std::to_string(static_cast<int>(now_)) +
                       " s: a router joined: " + std::to_string(blocks) + " blocks from " +
                       std::to_string(o_.workers) + " snapshots (" +
                       std::to_string(blocks * 18 / (1 << 20)) + " MiB on the wire), indexed in " +
                       std::to_string(s).substr(0, 5) + " s of one core");
    }
    routers_.push_back(std::move(r));
  }

  std::vector<int> LiveRouters() const {
    std::vector<int> live;
    for (size_t r = 0; r < routers_.size(); ++r)
      if (routers_[r]->alive) live.push_back(static_cast<int>(r));
    return live;
  }

  void Handle(const Event& e) {
    switch (e.kind) {
      case Kind::kArrive:
        Arrive(static_cast<int>(e.a));
        break;
      case Kind::kPrefillDone:
        PrefillDone(static_cast<int>(e.a), e.b, e.c);
        break;
      case Kind::kFinish:
        Finish(static_cast<int>(e.a));
        break;
      case Kind::kFlush:
        Flush();
        break;
      case Kind::kDeliver:
        Deliver();
        break;
      case Kind::kReport:
        Report();
        break;
      case Kind::kPhase:
        Phase(static_cast<int>(e.a));
        break;
      case Kind::kDetect:
        Detect(static_cast<int>(e.a));
        break;
      case Kind::kNewSession:
        NewSession();
        break;
    }
  }

  // Open loop: a session of a random tenant starts now, and the next one
  // after an exponential gap.
  void NewSession() {
    Session session;
    session.tenant = static_cast<int>(rng_() % o_.tenants);
    session.uid = next_uid_++;
    sessions_.push_back(session);
    live_.Change(+1, now_);
    Arrive(static_cast<int>(sessions_.size()) - 1);
    Push(NextSessionGap(), Kind::kNewSession, 0);
  }

  // A session's next turn: a tool result appended, sent to a random router.
  void Arrive(int s) {
    Session& session = sessions_[s];
    session.history += static_cast<int64_t>(Uniform(static_cast<double>(o_.user_tokens.first),
                                                    static_cast<double>(o_.user_tokens.second)));
    auto req = std::make_unique<Request>();
    req->session = s;
    req->arrive = now_;
    req->out_tokens = static_cast<int32_t>(Uniform(static_cast<double>(o_.reply_tokens.first),
                                                   static_cast<double>(o_.reply_tokens.second)));
    req->prompt_tokens = o_.prefix_tokens + session.history;
    for (int64_t i = 0; i < o_.prefix_tokens / kBlockTokens; ++i)
      req->keys.push_back(TenantBlock(session.tenant, i));
    for (int64_t j = 0; j < session.history / kBlockTokens; ++j)
      req->keys.push_back(SessionBlock(session.uid, j));
    const std::vector<int> live = LiveRouters();
    req->router = live[rng_() % live.size()];
    const int id = static_cast<int>(requests_.size());
    requests_.push_back(std::move(req));
    Route(id);
  }

  // RouterCore::PlanAttempt, on the request's router.
  void Route(int id) {
    Request& req = *requests_[id];
    SimRouter& r = *routers_[req.router];
    const WorkerSet candidates_all = r.known - req.tried;
    if (candidates_all.empty()) {  // nothing left: the client sees an error
      ++phase_.failed;
      req.done = true;
      Push(now_ + 1, Kind::kArrive, req.session);
      return;
    }
    std::vector<BlockHash> hashes(req.keys.size());
    for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = HashOf(req.keys[i]);
    const std::string session_key = std::to_string(sessions_[req.session].uid);
    const auto t0 = WallClock::now();
    const PrefixMatch match = r.group->index.Match(hashes, candidates_all);
    auto hint = o_.session_ids ? r.affinity.Find(session_key, SimTime()) : std::nullopt;
    WorkerSet candidates = candidates_all;
    if (o_.sample > 0 && candidates.size() > 2 * o_.sample)
      candidates = SampleCandidates(r.snap, candidates, match, o_.sample, hint ? hint->slot : -1);
    std::vector<WorkerView> views;
    std::vector<const Candidate*> conns;
    const int32_t max_cacheable = static_cast<int32_t>((req.prompt_tokens - 1) / kBlockTokens);
    BuildWorkerViews(r.snap, candidates, match, max_cacheable, false, hint, &views, &conns);
    const SessionAffinity::LiveSummary live = r.affinity.SessionTokens(views, hint, SimTime());
    Decision d;
    const int32_t hold = SessionHoldTokens(hint, static_cast<int32_t>(req.prompt_tokens),
                                           max_cacheable * kBlockTokens, false);
    if (!StickToSession(hint, views, hold, 2.0, 4, &d))
      d = r.policy->Choose({static_cast<int32_t>(req.prompt_tokens), views, hashes, kBlockTokens,
                            live.mean_tokens, live.mean_turn_tokens});
    const int slot = views[d.index].slot;
    ++req.attempt;
    r.group->index.AddOptimistic(
        slot, std::span<const BlockHash>(hashes).subspan(
                  std::min(hashes.size(), static_cast<size_t>(match.exact_blocks[slot]))));
    if (o_.session_ids)
      r.affinity.Record(
          session_key,
          {std::string(views[d.index].id), static_cast<int32_t>(req.prompt_tokens), slot,
           std::max<int64_t>(0, req.prompt_tokens - views[d.index].cached_tokens)},
          SimTime());
    r.decision_us.push_back(
        std::chrono::duration<double, std::micro>(WallClock::now() - t0).count());
    req.lease = std::make_unique<WorkerLease>(conns[d.index]->worker,
                                              req.prompt_tokens - views[d.index].cached_tokens);
    req.worker = slot;
    req.tried.Add(slot);
    // The best any router could have found: the longest prefix a live
    // worker held.
    req.fleet_held = 0;
    for (const auto& k : req.keys) {
      auto it = holders_.find(k);
      if (it == holders_.end() || it->second == 0) break;
      ++req.fleet_held;
    }
    Worker& w = workers_[slot];
    req.routed_held = w.cache.Held(req.keys);
    if (!w.alive) {      // the call fails at once: the router marks the worker
      ++phase_.retried;  // unhealthy (WorkerLease::ReportFailure) and retries
      req.lease.reset();
      LeaveRoutingSet(r, slot);
      Route(id);
      return;
    }
    w.queue.push_back(id);
    if (w.prefilling < 0) StartPrefill(slot);
  }

  void StartPrefill(int slot) {
    Worker& w = workers_[slot];
    if (w.queue.empty()) return;
    // Cache-first admission, as the worker's scheduler: of the first 16
    // queued, the one holding the most cached blocks (the oldest on ties).
    size_t pick = 0;
    int64_t most = -1;
    for (size_t i = 0; i < std::min<size_t>(w.queue.size(), 16); ++i) {
      const int64_t held = w.cache.Held(requests_[w.queue[i]]->keys);
      if (held > most) {
        most = held;
        pick = i;
      }
    }
    const int id = w.queue[pick];
    w.queue.erase(w.queue.begin() + static_cast<std::ptrdiff_t>(pick));
    Request& req = *requests_[id];
    w.prefilling = id;
    const int64_t held = w.cache.Held(req.keys);
    PinKeys(slot, req.keys);
    const int64_t cached = std::min(held * kBlockTokens, req.prompt_tokens - 1);
    phase_.prompt_tokens += req.prompt_tokens;
    phase_.hit_tokens += cached;
    w.prompt_tokens += req.prompt_tokens;
    w.cached_tokens += cached;
    phase_.fleet_tokens += std::min(req.fleet_held * kBlockTokens, req.prompt_tokens - 1);
    phase_.CountPrefill(cached, req.prompt_tokens, req.routed_held * kBlockTokens,
                        req.fleet_held * kBlockTokens);
    if (shared_.on()) {
      shared_.Start(w, static_cast<double>(req.prompt_tokens - cached), now_);
      Reshare();
      return;
    }
    const double seconds = static_cast<double>(req.prompt_tokens - cached) / o_.PrefillTps(slot);
    w.busy_s += seconds;
    w.prefill_end = now_ + seconds;
    Push(now_ + seconds, Kind::kPrefillDone, id, req.attempt);
  }

  // --shared-cores: a prefill that starts or ends changes the others'
  // speed; each gets its new end (SharedCores).
  void Reshare() {
    shared_.Reshare(workers_, o_, now_, [&](int slot, double end, int64_t version) {
      const int id = workers_[slot].prefilling;
      Push(end, Kind::kPrefillDone, id, requests_[id]->attempt, version);
    });
  }

  void PrefillDone(int id, int64_t attempt, int64_t version) {
    if (!requests_[id]) return;
    Request& req = *requests_[id];
    if (req.done || attempt != req.attempt) return;  // failed, or retried elsewhere
    Worker& w = workers_[req.worker];
    if (shared_.on() && (w.prefilling != id || !shared_.End(w, version, now_)))
      return;  // rescheduled since
    phase_.ttft.push_back(now_ - req.arrive);
    if (req.lease) req.lease->PrefillDone();
    w.prefilling = -1;
    w.decoding.push_back(id);
    Push(now_ + req.out_tokens / o_.decode_tps, Kind::kFinish, id);
    StartPrefill(req.worker);
    // A next prefill started there has reshared the cores already.
    if (shared_.on() && w.prefilling < 0) Reshare();
  }

  void Finish(int id) {
    Request& req = *requests_[id];
    if (req.done) {  // its stream failed with its worker
      requests_[id].reset();
      return;
    }
    req.done = true;
    const int slot = req.worker;
    Worker& w = workers_[slot];
    std::erase(w.decoding, id);
    Session& session = sessions_[req.session];
    const int64_t before = session.history / kBlockTokens;
    session.history += req.out_tokens;
    // The answer's full blocks join the cache with the prompt's.
    std::vector<uint64_t> answer;
    for (int64_t j = before; j < session.history / kBlockTokens; ++j)
      answer.push_back(SessionBlock(session.uid, j));
    PinKeys(slot, answer);
    UnpinKeys(slot, answer);
    UnpinKeys(slot, req.keys);
    req.lease.reset();
    ++w.served;
    ++phase_.requests;
    if (++session.turn >= o_.turns) {
      if (o_.session_rate > 0) {  // open loop: it ends
        live_.Change(-1, now_);
        requests_[id].reset();
        return;
      }
      // Closed loop: a new session of the same tenant.
      session.uid = next_uid_++;
      session.turn = 0;
      session.history = 0;
    }
    Push(now_ + std::exponential_distribution<double>(1 / o_.think_s)(rng_), Kind::kArrive,
         req.session);
    requests_[id].reset();
  }

  void PinKeys(int slot, const std::vector<uint64_t>& keys) {
    workers_[slot].cache.Pin(keys);
    TrackEvents(slot);
  }
  void UnpinKeys(int slot, const std::vector<uint64_t>& keys) {
    workers_[slot].cache.Unpin(keys);
    TrackEvents(slot);
  }
  // The fleet-wide count of holders (for "fleet held"), and the worker's
  // pending event batch.
  void TrackEvents(int slot) {
    for (WorkerCache::Run& run : workers_[slot].cache.TakeEvents()) {
      for (uint64_t k : run.keys) holders_[k] += run.stored ? 1 : -1;
      auto& pending = pending_[slot];
      if (pending.empty() || pending.back().stored != run.stored) {
        pending.push_back(std::move(run));
      } else {
        auto& keys = pending.back().keys;
        keys.insert(keys.end(), run.keys.begin(), run.keys.end());
      }
    }
  }

  void Flush() {
    std::vector<EventBatch> batches;
    for (auto& [slot, runs] : pending_) {
      if (runs.empty() || !workers_[slot].alive) continue;
      EventBatch b;
      b.worker = slot;
      for (auto& run : runs) {
        std::vector<BlockHash> hashes(run.keys.size());
        for (size_t i = 0; i < hashes.size(); ++i) hashes[i] = HashOf(run.keys[i]);
        b.blocks += static_cast<int64_t>(hashes.size());
        b.runs.emplace_back(run.stored, std::move(hashes));
      }
      if (o_.load_with_events) b.load = LoadOf(slot);
      batches.push_back(std::move(b));
    }
    pending_.clear();
    if (!batches.empty()) {
      in_transit_.push_back(std::move(batches));
      Push(now_ + o_.lag_ms / 1000, Kind::kDeliver, 0);
    }
    Push(now_ + o_.event_ms / 1000, Kind::kFlush, 0);
  }

  // Every live router applies the oldest flush's batches to its index.
  void Deliver() {
    std::vector<EventBatch> batches = std::move(in_transit_.front());
    in_transit_.pop_front();
    for (auto& r : routers_) {
      if (!r->alive) continue;
      const auto t0 = WallClock::now();
      for (const EventBatch& b : batches) {
        if (!r->known.Contains(b.worker)) continue;
        for (const auto& [stored, hashes] : b.runs) {
          if (stored)
            r->group->index.AddExact(b.worker, hashes);
          else
            r->group->index.RemoveExact(b.worker, hashes);
        }
        if (b.load) r->clients[b.worker]->set_load(*b.load);
        r->ingest_blocks += b.blocks;
        ++r->ingest_batches;
        // 18 bytes a hash (16 and its tag), ~12 a run, ~24 a batch, and the
        // load it carries.
        r->ingest_bytes += b.blocks * 18 + static_cast<int64_t>(b.runs.size()) * 12 + 24 +
                           (b.load ? static_cast<int64_t>(b.load->ByteSizeLong()) : 0);
      }
      r->ingest_s += std::chrono::duration<double>(WallClock::now() - t0).count();
    }
  }

  // What a worker reports as its load (Worker.GetLoad).
  kvmesh::v1::LoadResponse LoadOf(int w) const {
    const Worker& worker = workers_[w];
    kvmesh::v1::LoadResponse load;
    load.set_running(static_cast<uint32_t>(worker.decoding.size() + (worker.prefilling >= 0)));
    load.set_waiting(static_cast<uint32_t>(worker.queue.size()));
    // As the worker counts it: the queued prompts less what its cache holds
    // of the first 16 (its admission lookahead), and what is left of the
    // prefill in progress.
    double queued = 0;
    size_t looked = 0;
    for (const int id : worker.queue) {
      const Request& q = *requests_[id];
      const int64_t held = looked++ < 16 ? worker.cache.Held(q.keys) * kBlockTokens : 0;
      queued += static_cast<double>(q.prompt_tokens - std::min(held, q.prompt_tokens - 1));
    }
    if (worker.prefilling >= 0 && shared_.on()) {
      queued += SharedCores::Left(worker, now_);
    } else if (worker.prefilling >= 0) {
      queued += std::max(0.0, worker.prefill_end - now_) * o_.PrefillTps(w);
    }
    load.set_queued_prefill_tokens(static_cast<uint64_t>(queued));
    // Sharing cores, the speed its last prefill measured, as a worker
    // measures its own.
    load.set_prefill_tokens_per_s(shared_.on() && worker.measured_tps > 0 ? worker.measured_tps
                                                                          : o_.PrefillTps(w));
    load.set_kv_blocks_total(static_cast<uint64_t>(o_.worker_blocks));
    load.set_kv_blocks_used(static_cast<uint64_t>(worker.cache.pinned()));
    load.set_kv_blocks_cached(static_cast<uint64_t>(worker.cache.unpinned()));
    load.set_kv_refill_ratio(worker.cache.refill_ratio());
    load.set_kv_blocks_free(
        static_cast<uint64_t>(std::max<int64_t>(0, o_.worker_blocks - worker.cache.pinned())));
    return load;
  }

  void Report() {
    for (int w = 0; w < o_.workers; ++w) {
      if (!workers_[w].alive) continue;
      const kvmesh::v1::LoadResponse load = LoadOf(w);
      for (auto& r : routers_) r->clients[w]->set_load(load);
    }
    Push(now_ + o_.report_ms / 1000, Kind::kReport, 0);
  }

  void Phase(int p) {
    if (p > 0) EndPhase();
    phase_ = {};
    for (auto& r : routers_) {
      r->ingest_blocks = r->ingest_batches = r->ingest_bytes = 0;
      r->ingest_s = 0;
      r->decision_us.clear();
    }
    for (Worker& w : workers_) w.busy_s = w.prompt_tokens = w.cached_tokens = 0;
    phase_start_ = now_;
    live_.StartPhase(now_);
    if (p == 0) phase_name_ = "steady";
    if (p == 1) {
      AddRouter(true);
      phase_name_ = "router added";
    }
    if (p == 2) {
      for (auto& r : routers_) {
        if (r->alive) {  // the oldest drains: its streams finish, no new ones
          r->alive = false;
          break;
        }
      }
      phase_name_ = "router removed";
    }
    if (p == 3) {
      LoseZone(0);
      phase_name_ = "zone lost";
    }
  }

  void LoseZone(int zone) {
    int lost_workers = 0, retried = 0, failed = 0;
    for (int slot = zone; slot < o_.workers; slot += o_.zones) {
      Worker& w = workers_[slot];
      w.alive = false;
      ++lost_workers;
      // Not yet streaming: the router retries elsewhere (before the first
      // token). Streaming: the client sees the stream fail and retries the turn.
      std::vector<int> requeue(w.queue.begin(), w.queue.end());
      if (w.prefilling >= 0) requeue.push_back(w.prefilling);
      for (int id : requeue) {
        ++retried;
        ++phase_.retried;
        requests_[id]->lease.reset();
        Route(id);  // a new attempt: the old one's PrefillDone is void
      }
      for (int id : w.decoding) {
        ++failed;
        ++phase_.failed;
        Request& req = *requests_[id];
        req.done = true;
        req.lease.reset();
        Push(now_ + 1, Kind::kArrive, req.session);
      }
      w.queue.clear();
      if (w.prefilling >= 0 && shared_.on()) shared_.Lose();
      w.prefilling = -1;
      w.decoding.clear();
      w.cache.ForEach([&](uint64_t k) { --holders_[k]; });
      w.cache.Clear();
      pending_.erase(slot);
      Push(now_ + o_.detect_ms / 1000, Kind::kDetect, slot);
    }
    if (shared_.on()) Reshare();
    notes_.push_back("t=" + std::to_string(static_cast<int>(now_)) + " s: zone " +
                     std::to_string(zone) + " lost: " + std::to_string(lost_workers) +
                     " workers; " + std::to_string(retried) +
                     " requests not yet streaming retried elsewhere, " + std::to_string(failed) +
                     " streams failed to their clients (each retried its turn 1 s later)");
  }

  static void LeaveRoutingSet(SimRouter& r, int slot) {
    r.known.Remove(slot);
    std::vector<Candidate> healthy = r.snap.healthy();
    std::erase_if(healthy, [slot](const Candidate& c) { return c.slot == slot; });
    r.snap = ModelSnapshot(r.snap.group, std::move(healthy));
  }

  // Routers notice a lost worker (its load polls fail --detect-ms after,
  // unless a call failed first): it leaves their candidates and its blocks
  // leave their indexes.
  void Detect(int slot) {
    for (auto& r : routers_) {
      LeaveRoutingSet(*r, slot);
      r->group->index.RemoveWorker(slot);
    }
  }

  // The phase's SpeedNote (sim_report.h): its work by class of speed.
  void EndPhase() {
    const double span = now_ - phase_start_;
    const int live_routers = static_cast<int>(LiveRouters().size());
    phase_.PrintRow(
        phase_name_, live_routers, BusyMaxOverMean(workers_),
        o_.session_rate > 0 ? live_.Mean(now_, span) : static_cast<double>(sessions_.size()));
    notes_.push_back(phase_.RecomputeNote(phase_name_));
    if (o_.MixedSpeeds()) notes_.push_back(SpeedNoteOf(phase_name_, workers_, o_, span));
    router_rows_.push_back(RouterRowOf(phase_name_, routers_, span));
  }

  const Options o_;
  std::mt19937_64 rng_;
  const int n_routers_;
  const WallClock::time_point sim_epoch_ = WallClock::now();
  double now_ = 0;
  uint64_t seq_ = 0;
  uint64_t next_uid_ = 1;
  SharedCores shared_{o_.shared_cores};
  LiveCount live_;  // open loop
  std::priority_queue<Event, std::vector<Event>, std::greater<>> events_;
  std::vector<Worker> workers_;
  std::vector<std::unique_ptr<SimRouter>> routers_;
  std::vector<Session> sessions_;
  std::vector<std::unique_ptr<Request>> requests_;
  absl::flat_hash_map<uint64_t, int32_t> holders_;
  absl::flat_hash_map<int, std::vector<WorkerCache::Run>> pending_;
  std::deque<std::vector<EventBatch>> in_transit_;
  PhaseStats phase_;
  double phase_start_ = 0;
  std::string phase_name_;
  std::vector<RouterRow> router_rows_;
  std::vector<std::string> notes_;
};

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (const std::string error = ParseOptions(argc, argv, &o); !error.empty()) {
    std::fprintf(stderr,
                 "scale_sim: %s (flags: see the comment at the top of bench/scale_sim.cc)\n",
                 error.c_str());
    return 2;
  }
  for (int n : o.routers) Simulation(o, n).Run();
  return 0;
}
