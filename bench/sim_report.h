// bench/scale_sim's per-phase measurements and its per-router table.
#pragma once

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
