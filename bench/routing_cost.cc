// Routing decision cost: the prefix index lookup plus the prefix policy, with
// 64 fake workers and 1M indexed blocks, as kvmesh-router does per request.
//
//   build/bench/routing_cost [--blocks 1000000] [--workers 64] [--requests 20000]
//
// Each worker holds its own sessions' chains of blocks (16-token blocks);
// requests are a mix of hits (an existing session's prefix plus new tokens)
// and misses. Prints decision-time p50/p90/p99 and the index's memory.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "router/policies/policy.h"
#include "router/prefix_index.h"

namespace {

using kvmesh::BlockHash;
using namespace kvmesh::router;

long RssKb() {
  std::ifstream in("/proc/self/status");
  std::string k;
  long v = 0;
  while (in >> k) {
    if (k == "VmRSS:") {
      in >> v;
      return v;
    }
  }
  return -1;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t blocks = 1000000;
  int workers = 64;
  int requests = 20000;
  int prompt_blocks = 128;  // a 2048-token prompt
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--blocks")) blocks = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--workers")) workers = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--requests")) requests = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--prompt-blocks")) prompt_blocks = std::atoi(argv[i + 1]);
  }
  std::mt19937_64 rng(1);
  PrefixIndex index;
  const long rss0 = RssKb();
  // Sessions of `prompt_blocks` blocks, spread round-robin over the workers.
  const int64_t sessions = blocks / prompt_blocks;
  std::vector<std::vector<BlockHash>> chains(sessions);
  const auto t_fill = std::chrono::steady_clock::now();
  for (int64_t s = 0; s < sessions; ++s) {
    std::vector<int32_t> tokens(prompt_blocks * 16);
    for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % 128000);
    chains[s] = kvmesh::HashFullBlocks(kvmesh::RootHash("model"), tokens, 16);
    index.AddExact(static_cast<int>(s % workers), chains[s]);
  }
  const double fill_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t_fill).count();
  const long rss1 = RssKb();

  WorkerSet all;
  std::vector<WorkerView> views(workers);
  for (int w = 0; w < workers; ++w) {
    all.Add(w);
    views[w].slot = w;
    views[w].running = static_cast<int32_t>(rng() % 8);
    views[w].prefill_tokens_per_s = 8000 + static_cast<double>(rng() % 4000);
  }
  auto policy = MakePrefixPolicy({});
  std::vector<double> micros;
  micros.reserve(requests);
  int hits = 0;
  for (int r = 0; r < requests; ++r) {
    // 80%: an existing session's first k blocks (a follow-up); 20%: new.
    std::vector<BlockHash> hashes;
    if (rng() % 5 != 0) {
      const auto& chain = chains[rng() % sessions];
      hashes.assign(chain.begin(), chain.begin() + 1 + rng() % chain.size());
    } else {
      std::vector<int32_t> tokens(prompt_blocks * 16);
      for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % 128000);
      hashes = kvmesh::HashFullBlocks(kvmesh::RootHash("model"), tokens, 16);
    }
    const auto t0 = std::chrono::steady_clock::now();
    const PrefixMatch m = index.Match(hashes, all);
    for (int w = 0; w < workers; ++w) views[w].cached_tokens = m.blocks[w] * 16;
    const Decision d =
        policy->Choose({static_cast<int32_t>(hashes.size() * 16), views, hashes, 16});
    micros.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    hits += views[d.index].cached_tokens > 0;
  }
  std::sort(micros.begin(), micros.end());
  auto pct = [&](double p) { return micros[static_cast<size_t>(p * (micros.size() - 1))]; };
  std::printf(
      "routing_cost: %d workers, %zu indexed blocks (%lld sessions of %d blocks), filled in %.1f "
      "s\n",
      workers, index.size(), static_cast<long long>(sessions), prompt_blocks, fill_s);
  std::printf("index memory: %.1f MiB (RSS growth)\n", (rss1 - rss0) / 1024.0);
  std::printf("decision time (index match + prefix policy), %d requests of up to %d blocks:\n",
              requests, prompt_blocks);
  std::printf(
      "  p50 %.1f us   p90 %.1f us   p99 %.1f us   max %.1f us   (routed to a holder: %.1f%%)\n",
      pct(0.5), pct(0.9), pct(0.99), micros.back(), 100.0 * hits / requests);
  std::printf(
      "{\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"blocks\":%zu,\"workers\":%d,\"index_"
      "mib\":%.1f}\n",
      pct(0.5), pct(0.9), pct(0.99), index.size(), workers, (rss1 - rss0) / 1024.0);
  return 0;
}
