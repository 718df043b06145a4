// bench/scale_sim's per-phase measurements and its per-router table.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "bench/sim_model.h"

namespace kvmesh::bench {

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
                int64_t live_sessions) const {
    const auto ratio = [&](int64_t n) {
      return 100.0 * static_cast<double>(n) /
             std::max<double>(1, static_cast<double>(prompt_tokens));
    };
    std::printf(
        "| %s | %d | %lld | %.1f%% | %.1f%% | %.2f | %.2f | %.2f | %lld | %lld | %.1f | %lld |\n",
        phase.c_str(), routers, static_cast<long long>(requests), ratio(hit_tokens),
        ratio(fleet_tokens), Percentile(ttft, 0.5), Percentile(ttft, 0.9), Percentile(ttft, 0.99),
        static_cast<long long>(retried), static_cast<long long>(failed), busy_max_over_mean,
        static_cast<long long>(live_sessions));
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
