// bench/scale_sim's per-phase measurements and its per-router table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "bench/sim_model.h"

namespace kvmesh::bench {

// The run's title line and the phase table's header.
inline void PrintRunHeader(const Options& o, int routers, int sessions) {
  std::string fleet = std::to_string(o.workers) + " workers";
  if (o.MixedSpeeds()) {
    char mix[96];
    std::snprintf(mix, sizeof mix, " (%.0f%% of them prefilling %.3g× slower)", 100 * o.slow_share,
                  o.slow_factor);
    fleet += mix;
  }
  std::printf("\n## %d router%s, policy %s: %s in %d zones, ", routers, routers == 1 ? "" : "s",
              o.policy.c_str(), fleet.c_str(), o.zones);
  if (o.session_rate > 0) {
    std::printf("open loop: %.2f new sessions/s of %d tenants, %d turns each", o.session_rate,
                o.tenants, o.turns);
  } else {
    std::printf("%d sessions of %d tenants (KV demand %.0f%%)", sessions, o.tenants,
                100 * o.demand);
  }
  if (o.user_tokens != Options().user_tokens || o.reply_tokens != Options().reply_tokens) {
    const auto range = [](std::pair<int64_t, int64_t> r) {
      return r.first == r.second ? std::to_string(r.first)
                                 : std::to_string(r.first) + "-" + std::to_string(r.second);
    };
    std::printf(", turns of %s + %s tokens", range(o.user_tokens).c_str(),
                range(o.reply_tokens).c_str());
  }
  std::printf(
      "%s\n\n"
      "| phase | routers | requests | hit ratio | fleet held | TTFT p50 s | p90 s | "
      "p99 s | retried | failed mid-stream | prefill busy max/mean | live sessions (mean) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
      o.session_ids ? "" : ", no session ids");
}

// One class of workers in a fleet of unequal speeds, over a phase.
struct SpeedClass {
  int workers = 0;
  int64_t prompt = 0, cached = 0;  // prompt tokens its prefills were given, found cached
  double busy_s = 0;               // prefill time, summed
};

// Where the prefill work went: the slow workers' share of the prompt
// tokens computed, and each class's hit ratio and prefill busy time over
// the phase's `span_s`.
inline std::string SpeedNote(const std::string& phase, const SpeedClass& slow,
                             const SpeedClass& fast, double span_s) {
  const auto describe = [&](const char* name, const SpeedClass& c) {
    char line[160];
    std::snprintf(line, sizeof line, "%s: %d workers, %.1f%% hits, prefill busy %.0f%%", name,
                  c.workers, c.prompt > 0 ? 100.0 * c.cached / c.prompt : 0.0,
                  c.workers > 0 && span_s > 0 ? 100 * c.busy_s / (c.workers * span_s) : 0.0);
    return std::string(line);
  };
  const int64_t computed = (slow.prompt - slow.cached) + (fast.prompt - fast.cached);
  char head[96];
  std::snprintf(head, sizeof head, "%s: the slow workers computed %.1f%% of the prompt tokens; ",
                phase.c_str(), computed > 0 ? 100.0 * (slow.prompt - slow.cached) / computed : 0.0);
  return head + describe("slow", slow) + "; " + describe("fast", fast);
}

// SpeedNote of a phase of `span_s`, from the live workers' counts.
inline std::string SpeedNoteOf(const std::string& phase, const std::vector<Worker>& workers,
                               const Options& o, double span_s) {
  SpeedClass slow, fast;
  for (int slot = 0; slot < static_cast<int>(workers.size()); ++slot) {
    const Worker& w = workers[slot];
    if (!w.alive) continue;
    SpeedClass& c = o.Slow(slot) ? slow : fast;
    ++c.workers;
    c.prompt += w.prompt_tokens;
    c.cached += w.cached_tokens;
    c.busy_s += w.busy_s;
  }
  return SpeedNote(phase, slow, fast, span_s);
}

// The busiest live worker's prefill time over the live workers' mean (0
// when none prefilled).
inline double BusyMaxOverMean(const std::vector<Worker>& workers) {
  double busy_max = 0, busy_sum = 0;
  int alive = 0;
  for (const Worker& w : workers) {
    if (!w.alive) continue;
    ++alive;
    busy_max = std::max(busy_max, w.busy_s);
    busy_sum += w.busy_s;
  }
  return busy_sum > 0 ? busy_max / (busy_sum / alive) : 0.0;
}

// What one phase measured of the requests.
struct PhaseStats {
  int64_t requests = 0, prompt_tokens = 0, hit_tokens = 0, fleet_tokens = 0;
  int64_t retried = 0, failed = 0;
  std::vector<double> ttft;
  // Prefills started, and those that computed over half their prompt, by
  // where the rest of it was when the router chose: on the chosen worker,
  // which held over half of the prompt then and evicted it while the
  // request queued there; on another worker (more of it than on the chosen
  // one); or on no live worker.
  int64_t prefills = 0, recomputed_nowhere = 0, recomputed_elsewhere = 0, recomputed_evicted = 0;

  // A prefill starting: `cached` of its `prompt` tokens found on its worker,
  // which held `routed_held` leading tokens when the router chose it; some
  // live worker then held `fleet_held`.
  void CountPrefill(int64_t cached, int64_t prompt, int64_t routed_held, int64_t fleet_held) {
    ++prefills;
    if (2 * cached >= prompt) return;
    if (2 * routed_held >= prompt)
      ++recomputed_evicted;
    else if (fleet_held > routed_held)
      ++recomputed_elsewhere;
    else
      ++recomputed_nowhere;
  }

  // The phase's row of the main table.
  void PrintRow(const std::string& phase, int routers, double busy_max_over_mean,
                double live_sessions) const {
    const auto ratio = [&](int64_t n) {
      return 100.0 * static_cast<double>(n) /
             std::max<double>(1, static_cast<double>(prompt_tokens));
    };
    std::printf(
        "| %s | %d | %lld | %.1f%% | %.1f%% | %.3f | %.3f | %.3f | %lld | %lld | %.1f | %.1f |\n",
        phase.c_str(), routers, static_cast<long long>(requests), ratio(hit_tokens),
        ratio(fleet_tokens), Percentile(ttft, 0.5), Percentile(ttft, 0.9), Percentile(ttft, 0.99),
        static_cast<long long>(retried), static_cast<long long>(failed), busy_max_over_mean,
        live_sessions);
  }

  // "PHASE: X% of prefills computed over half their prompt, …".
  std::string RecomputeNote(const std::string& phase) const {
    const auto share = [&](int64_t n) {
      char buf[16];
      std::snprintf(
          buf, sizeof buf, "%.1f%%",
          100.0 * static_cast<double>(n) / std::max<double>(1, static_cast<double>(prefills)));
      return std::string(buf);
    };
    return phase + ": " + share(recomputed_nowhere + recomputed_elsewhere + recomputed_evicted) +
           " of prefills computed over half their prompt, the rest of it: on no live worker " +
           share(recomputed_nowhere) + ", more of it on another worker " +
           share(recomputed_elsewhere) + ", evicted while queued " + share(recomputed_evicted);
  }
};

// What one phase measured of each router (one entry per router).
struct RouterRow {
  std::string phase;
  std::vector<double> blocks_s, batches_s, mib_s, ingest_core, ns_per_block, decisions_s,
      decision_p50, decision_p99, index_blocks;
};

// The phase's row for each router live in it or deciding in it, over
// its `span_s`.
inline RouterRow RouterRowOf(const std::string& phase,
                             const std::vector<std::unique_ptr<SimRouter>>& routers,
                             double span_s) {
  RouterRow row;
  row.phase = phase;
  for (const auto& r : routers) {
    if (!r->alive && r->decision_us.empty()) continue;
    row.blocks_s.push_back(static_cast<double>(r->ingest_blocks) / span_s);
    row.batches_s.push_back(static_cast<double>(r->ingest_batches) / span_s);
    row.mib_s.push_back(static_cast<double>(r->ingest_bytes) / span_s / (1 << 20));
    row.ingest_core.push_back(r->ingest_s / span_s);
    row.ns_per_block.push_back(1e9 * r->ingest_s /
                               std::max<double>(1, static_cast<double>(r->ingest_blocks)));
    row.decisions_s.push_back(static_cast<double>(r->decision_us.size()) / span_s);
    row.decision_p50.push_back(Percentile(r->decision_us, 0.5));
    row.decision_p99.push_back(Percentile(r->decision_us, 0.99));
    row.index_blocks.push_back(static_cast<double>(r->group->index.size()));
  }
  return row;
}

// The per-router table (the median router of each phase), then the notes
// and how often a cache went over capacity with every block pinned.
inline void PrintRouterTable(const std::vector<RouterRow>& rows, int64_t overflow,
                             const std::vector<std::string>& notes) {
  std::printf(
      "\nPer router (the median router of the phase; simulated seconds, measured CPU):\n\n"
      "| phase | event blocks/s | batches/s | MiB/s | ingest CPU | ns/block | "
      "decisions/s | decision p50 µs | p99 µs | indexed blocks |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const RouterRow& row : rows) {
    auto med = [](std::vector<double> v) { return Percentile(std::move(v), 0.5); };
    std::printf("| %s | %.0f | %.0f | %.2f | %.2f%% | %.0f | %.1f | %.1f | %.1f | %.0f |\n",
                row.phase.c_str(), med(row.blocks_s), med(row.batches_s), med(row.mib_s),
                100 * med(row.ingest_core), med(row.ns_per_block), med(row.decisions_s),
                med(row.decision_p50), med(row.decision_p99), med(row.index_blocks));
  }
  std::printf("\n");
  for (const std::string& n : notes) std::printf("- %s\n", n.c_str());
  std::printf("- caches over capacity with every block pinned: %lld times\n",
              static_cast<long long>(overflow));
}

}  // namespace kvmesh::bench
