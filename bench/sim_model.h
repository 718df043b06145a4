// The parts of bench/scale_sim that are data: its options, the simulated
// sessions, requests, workers and routers, and the events between them.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench/sim_worker_cache.h"
#include "router/fake_worker_client.h"
#include "router/policies/policy.h"
#include "router/registry.h"
#include "router/session_affinity.h"
#include "router/worker_client.h"
#include "router/worker_set.h"

namespace kvmesh::bench {

using router::FakeWorkerClient;
using router::ModelGroup;
using router::ModelSnapshot;
using router::Policy;
using router::SessionAffinity;
using router::WorkerLease;
using router::WorkerSet;

constexpr int kBlockTokens = 16;

struct Options {
  int workers = 1000;
  int zones = 3;
  std::vector<int> routers = {1, 2, 4};
  std::string policy = "prefix";
  double demand = 1.0;
  int64_t worker_blocks = 8192;  // 131,072 tokens of KV per worker
  int tenants = 200;
  int64_t prefix_tokens = 12000;
  int turns = 30;
  // Each turn appends a user message (a tool result) and a reply of sizes
  // drawn uniformly from these ranges.
  std::pair<int64_t, int64_t> user_tokens = {500, 2500};
  std::pair<int64_t, int64_t> reply_tokens = {100, 700};
  double think_s = 2.0;
  double prefill_tps = 20000;
  // A fleet of unequal speeds (older GPUs beside newer ones): this share of
  // the workers, every worker whose index i has floor((i + 1) × share) >
  // floor(i × share), so they spread evenly over the zones, prefill
  // --slow-factor times slower than --prefill-tps.
  double slow_share = 0;
  double slow_factor = 1;
  // The workers share this many cores for their prefills (processor
  // sharing: with more workers prefilling than cores, each goes at its
  // speed x cores / prefilling), as workers on one host do; 0: each worker
  // computes on its own, as workers with a GPU each do.
  double shared_cores = 0;
  double decode_tps = 50;
  double event_ms = 50;
  double lag_ms = 20;
  double report_ms = 250;
  bool load_with_events = true;  // workers send their load with each event batch
  // Agents name their session (x-session-id) so routers keep a session on
  // its worker; 0: they send none, as plain OpenAI clients, and only the
  // prefix index (or approx_prefix's text tree) finds a session's worker.
  bool session_ids = true;
  // How workers pick what to evict (worker/kv/adaptive_order.h).
  KvEviction eviction = KvEviction::kLru;
  double detect_ms = 600;  // 3 failed load polls 200 ms apart
  // Open loop: new sessions start at this many per simulated second
  // (Poisson), each ending after --turns turns, whatever the fleet serves;
  // 0 keeps --demand's number of sessions going (closed loop).
  double session_rate = 0;
  int sample = 64;
  double phase_s = 60;
  double warmup_s = 90;
  uint64_t seed = 1;
  // The prefix policy's weights (the router's prefix_* config keys).
  router::PrefixPolicyWeights weights;

  // Whether some workers are slower than the rest.
  bool MixedSpeeds() const { return slow_share > 0 && slow_factor > 1; }
  // A turn's mean tokens, its user message and reply together.
  double MeanTurnTokens() const {
    return (user_tokens.first + user_tokens.second) / 2.0 +
           (reply_tokens.first + reply_tokens.second) / 2.0;
  }
  // The sessions --demand sets in the closed loop: the fleet's KV over
  // --demand, less the tenants' prefixes, over a session's mean own tokens
  // (half its turns).
  int ClosedLoopSessions() const {
    const double capacity = static_cast<double>(workers) * worker_blocks * kBlockTokens;
    const double shared = static_cast<double>(tenants) * prefix_tokens;
    return std::max(
        1, static_cast<int>((demand * capacity - shared) / (turns / 2.0 * MeanTurnTokens())));
  }
  // Whether worker `slot` is one of the --slow-share.
  bool Slow(int slot) const {
    return MixedSpeeds() && std::floor((slot + 1) * slow_share) > std::floor(slot * slow_share);
  }
  // Its prefill speed: --prefill-tps, --slow-factor times less if slow.
  double PrefillTps(int slot) const { return Slow(slot) ? prefill_tps / slow_factor : prefill_tps; }
};

struct Session {
  int tenant = 0;
  uint64_t uid = 0;
  int turn = 0;
  int64_t history = 0;  // tokens after the tenant's prefix
};

struct Request {
  int session = 0;
  int router = 0;
  int worker = -1;
  int64_t prompt_tokens = 0;
  int32_t out_tokens = 0;
  double arrive = 0;
  int64_t fleet_held = 0;   // leading blocks some live worker held at decision
  int64_t routed_held = 0;  // leading blocks the chosen worker held at decision
  WorkerSet tried;
  std::unique_ptr<WorkerLease> lease;
  std::vector<uint64_t> keys;
  int64_t attempt = 0;
  bool done = false;
};

struct Worker {
  Worker(int64_t blocks, KvEviction eviction) : cache(blocks, eviction) {}
  WorkerCache cache;
  std::deque<int> queue;
  int prefilling = -1;
  std::vector<int> decoding;
  double prefill_end = 0;  // when the prefill in progress ends
  // With --shared-cores (SharedCores): the prefill in progress's tokens
  // left, its speed since prefill_since, when it started and its tokens
  // (to measure it), the version of its pending kPrefillDone, and the
  // speed its last prefill measured (what the worker reports).
  double prefill_left = 0, prefill_tps = 0, prefill_since = 0, prefill_start = 0;
  double prefill_tokens = 0;
  int64_t prefill_version = 0;
  double measured_tps = 0;
  double busy_s = 0;  // prefill time in the current phase
  // Prompt tokens its prefills were given and found cached, this phase.
  int64_t prompt_tokens = 0, cached_tokens = 0;
  int64_t served = 0;
  bool alive = true;
};

// Open loop: the sessions live now, and the mean over the phase so far.
class LiveCount {
 public:
  void Change(int delta, double now) {
    seconds_ += static_cast<double>(live_) * (now - since_);
    since_ = now;
    live_ += delta;
  }
  void StartPhase(double now) {
    seconds_ = 0;
    since_ = now;
  }
  // The mean over the phase now ending, `span` s long.
  double Mean(double now, double span) const {
    const double seconds = seconds_ + static_cast<double>(live_) * (now - since_);
    return span > 0 ? seconds / span : static_cast<double>(live_);
  }

 private:
  int64_t live_ = 0;    // started and not yet ended
  double seconds_ = 0;  // session-seconds live since the phase began
  double since_ = 0;    // when live_ last changed or the phase began
};

// --shared-cores: the workers' prefills in progress share the cores
// (processor sharing): with more workers prefilling than cores, each goes
// at its speed x cores / prefilling. Start, End and Lose change who
// prefills; Reshare then brings every prefill's tokens left up to now and
// gives it its new speed and end, under a version unique over the fleet,
// so that an end scheduled before (even a retried request's from a lost
// worker) is void.
class SharedCores {
 public:
  explicit SharedCores(double cores) : cores_(cores) {}
  bool on() const { return cores_ > 0; }

  void Start(Worker& w, double tokens, double now) {
    w.prefill_left = w.prefill_tokens = tokens;
    w.prefill_tps = 0;
    w.prefill_since = w.prefill_start = now;
    ++prefilling_;
  }
  // True when `version` is the worker's latest end: its prefill is done,
  // its speed measured, and it no longer shares the cores.
  bool End(Worker& w, int64_t version, double now) {
    if (version != w.prefill_version) return false;
    w.busy_s += now - w.prefill_since;
    if (now > w.prefill_start) w.measured_tps = w.prefill_tokens / (now - w.prefill_start);
    --prefilling_;
    return true;
  }
  // A worker lost while prefilling.
  void Lose() { --prefilling_; }
  // Calls schedule(slot, end, version) for every live worker prefilling.
  template <typename Schedule>
  void Reshare(std::vector<Worker>& workers, const Options& o, double now, Schedule schedule) {
    const double share =
        prefilling_ > 0 ? std::min(1.0, cores_ / static_cast<double>(prefilling_)) : 1.0;
    for (int slot = 0; slot < static_cast<int>(workers.size()); ++slot) {
      Worker& w = workers[slot];
      if (w.prefilling < 0 || !w.alive) continue;
      w.prefill_left = Left(w, now);
      w.busy_s += now - w.prefill_since;
      w.prefill_since = now;
      w.prefill_tps = o.PrefillTps(slot) * share;
      w.prefill_end = now + w.prefill_left / w.prefill_tps;
      w.prefill_version = ++versions_;
      schedule(slot, w.prefill_end, w.prefill_version);
    }
  }
  // Tokens left of w's prefill at `now`.
  static double Left(const Worker& w, double now) {
    return std::max(0.0, w.prefill_left - w.prefill_tps * (now - w.prefill_since));
  }

 private:
  double cores_;
  int prefilling_ = 0;
  int64_t versions_ = 0;
};

struct SimRouter {
  std::unique_ptr<ModelGroup> group;
  std::vector<std::shared_ptr<FakeWorkerClient>> clients;
  ModelSnapshot snap;
  WorkerSet known;  // workers it routes to
  SessionAffinity affinity;
  std::unique_ptr<Policy> policy;
  bool alive = true;
  // This phase's measurements.
  int64_t ingest_blocks = 0, ingest_batches = 0, ingest_bytes = 0;
  double ingest_s = 0;
  std::vector<double> decision_us;
};

// One batch per worker per flush: its runs of stored and removed hashes, and
// (with --load-with-events) the worker's load when the batch was sent.
struct EventBatch {
  int worker = 0;
  std::vector<std::pair<bool, std::vector<BlockHash>>> runs;
  int64_t blocks = 0;
  std::optional<v1::LoadResponse> load;
};

enum class Kind {
  kArrive,
  kPrefillDone,
  kFinish,
  kFlush,
  kDeliver,
  kReport,
  kPhase,
  kDetect,
  kNewSession
};

struct Event {
  double t;
  uint64_t seq;
  Kind kind;
  int64_t a;
  int64_t b = 0;  // a request's attempt (a retried request's old events are void)
  int64_t c = 0;  // kPrefillDone with --shared-cores: the worker's prefill version
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

inline double Percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

// Reads --flag value pairs into `o`; "" or what is wrong (the flag, its
// value, the limit).
inline std::string ParseOptions(int argc, char** argv, Options* o) {
  auto list = [](const std::string& v) {
    std::vector<int> out;
    for (size_t start = 0; start <= v.size();) {
      const size_t comma = v.find(',', start);
      out.push_back(std::stoi(v.substr(start, comma - start)));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
    return out;
  };
  // "N" or "MIN,MAX": a range of token counts.
  auto range = [&](const std::string& v) {
    const std::vector<int> r = list(v);
    if (r.size() > 2) throw std::invalid_argument(v);
    return std::pair<int64_t, int64_t>(r.front(), r.back());
  };
  const std::map<std::string, std::function<void(const std::string&)>> set = {
      {"--workers", [&](const std::string& v) { o->workers = std::stoi(v); }},
      {"--zones", [&](const std::string& v) { o->zones = std::stoi(v); }},
      {"--routers", [&](const std::string& v) { o->routers = list(v); }},
      {"--policy", [&](const std::string& v) { o->policy = v; }},
      {"--demand", [&](const std::string& v) { o->demand = std::stod(v); }},
      {"--worker-blocks", [&](const std::string& v) { o->worker_blocks = std::stoll(v); }},
      {"--tenants", [&](const std::string& v) { o->tenants = std::stoi(v); }},
      {"--prefix-tokens", [&](const std::string& v) { o->prefix_tokens = std::stoll(v); }},
      {"--turns", [&](const std::string& v) { o->turns = std::stoi(v); }},
      {"--user-tokens", [&](const std::string& v) { o->user_tokens = range(v); }},
      {"--reply-tokens", [&](const std::string& v) { o->reply_tokens = range(v); }},
      {"--think-s", [&](const std::string& v) { o->think_s = std::stod(v); }},
      {"--prefill-tps", [&](const std::string& v) { o->prefill_tps = std::stod(v); }},
      {"--slow-share", [&](const std::string& v) { o->slow_share = std::stod(v); }},
      {"--slow-factor", [&](const std::string& v) { o->slow_factor = std::stod(v); }},
      {"--shared-cores", [&](const std::string& v) { o->shared_cores = std::stod(v); }},
      {"--decode-tps", [&](const std::string& v) { o->decode_tps = std::stod(v); }},
      {"--event-ms", [&](const std::string& v) { o->event_ms = std::stod(v); }},
      {"--lag-ms", [&](const std::string& v) { o->lag_ms = std::stod(v); }},
      {"--report-ms", [&](const std::string& v) { o->report_ms = std::stod(v); }},
      {"--load-with-events",
       [&](const std::string& v) {
         if (v != "0" && v != "1") throw std::invalid_argument(v);
         o->load_with_events = v == "1";
       }},
      {"--session-ids",
       [&](const std::string& v) {
         if (v != "0" && v != "1") throw std::invalid_argument(v);
         o->session_ids = v == "1";
       }},
      {"--eviction",
       [&](const std::string& v) {
         const auto eviction = ParseKvEviction(v);
         if (!eviction) throw std::invalid_argument(v);
         o->eviction = *eviction;
       }},
      {"--detect-ms", [&](const std::string& v) { o->detect_ms = std::stod(v); }},
      {"--sample", [&](const std::string& v) { o->sample = std::stoi(v); }},
      {"--session-rate", [&](const std::string& v) { o->session_rate = std::stod(v); }},
      {"--phase-s", [&](const std::string& v) { o->phase_s = std::stod(v); }},
      {"--warmup-s", [&](const std::string& v) { o->warmup_s = std::stod(v); }},
      {"--seed", [&](const std::string& v) { o->seed = std::stoull(v); }},
      {"--displacement-weight",
       [&](const std::string& v) { o->weights.displacement_weight = std::stod(v); }},
      {"--live-session-weight",
       [&](const std::string& v) { o->weights.live_session_weight = std::stod(v); }},
      {"--refill-weight", [&](const std::string& v) { o->weights.refill_weight = std::stod(v); }},
      {"--session-load-weight",
       [&](const std::string& v) { o->weights.session_load_weight = std::stod(v); }},
      {"--session-growth-weight",
       [&](const std::string& v) { o->weights.session_growth_weight = std::stod(v); }},
      {"--guard-ratio", [&](const std::string& v) { o->weights.guard_ratio = std::stod(v); }},
      {"--guard-slack", [&](const std::string& v) { o->weights.guard_slack = std::stoi(v); }},
  };
  for (int i = 1; i < argc; i += 2) {
    const std::string flag = argv[i];
    auto it = set.find(flag);
    if (it == set.end()) return "unknown flag " + flag;
    if (i + 1 >= argc) return flag + " needs a value";
    try {
      it->second(argv[i + 1]);
    } catch (const std::exception&) {
      return flag + ": not a valid value: " + argv[i + 1];
    }
  }
  if (o->workers < 1 || o->workers > router::kMaxWorkersPerModel)
    return "--workers must be 1.." + std::to_string(router::kMaxWorkersPerModel);
  if (o->user_tokens.first < 1 || o->user_tokens.second < o->user_tokens.first ||
      o->reply_tokens.first < 1 || o->reply_tokens.second < o->reply_tokens.first)
    return "--user-tokens and --reply-tokens must be N or MIN,MAX with 1 <= MIN <= MAX";
  if (o->zones < 1 || o->tenants < 1 || o->turns < 1 || o->worker_blocks < 1)
    return "--zones, --tenants, --turns and --worker-blocks must be at least 1";
  if (o->demand <= 0 || o->prefill_tps <= 0 || o->decode_tps <= 0 || o->think_s <= 0)
    return "--demand, --prefill-tps, --decode-tps and --think-s must be positive";
  if (!(o->shared_cores >= 0)) return "--shared-cores must be 0 (none shared) or positive";
  if (o->slow_share < 0 || o->slow_share > 1 || o->slow_factor < 1)
    return "--slow-share must be 0..1 and --slow-factor at least 1";
  if (o->session_rate < 0) return "--session-rate must be 0 (closed loop) or positive";
  for (int n : o->routers)
    if (n < 1) return "--routers entries must be at least 1";
  return "";
}

}  // namespace kvmesh::bench
