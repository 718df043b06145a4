// Routing decision cost and prefix-index scale: what kvmesh-router does per
// request (the prefix index match, the policy's view of every candidate
// worker, the prefix policy), at 1,000 workers and 10M indexed blocks.
//
//   build/bench/routing_cost [--blocks 10000000] [--workers 1000]
//       [--requests 20000] [--prompt-blocks 128] [--threads 2]
//       [--churn-seconds 5] [--sample 64]
//
// Each worker holds its own sessions' chains of blocks (16-token blocks),
// spread round-robin; requests are a mix of hits (an existing session's
// prefix) and misses (a new prompt). Reports:
//   - ingest: blocks/s the index takes from the workers' event streams, while
//     filling (BlockStored only) and in a steady churn (each step one
//     session's chain is removed from a worker and another stored there, as a
//     busy worker's cache turns over), over --threads event threads as the
//     router runs one per worker stream;
//   - index memory: RSS growth while filling (the chains' own memory is
//     allocated before);
//   - decision time, one thread: a registry snapshot (Registry::Snapshot of
//     a registry of fake clients, each request's first step), then
//     PrefixIndex::Match over every worker; then,
//     as RouterCore::PlanAttempt does, SampleCandidates when there are more
//     than 2 × --sample workers (router option decision_sample; 0: weigh
//     all), BuildWorkerViews (each weighed candidate's load report and id,
//     read through its WorkerClient) and the prefix policy; p50, p90, p99
//     and max, in total and per part ("views" includes the sampling);
//   - the same total in the deciding thread's CPU time, which leaves out
//     what the VM or the kernel ran instead (a shared or virtual CPU);
//   - the registry snapshot alone, on one thread and on --threads at once
//     (routing threads share it);
//   - the noise floor: a fixed computation of about the same length as a
//     decision, timed after each one, in wall and CPU time. Its spread is
//     the machine's (timer interrupts, a shared or virtual CPU), not the
//     router's.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/log.h"
#include "common/tokenizer/tokenizer_config.h"
#include "common/tokenizer_spec.h"
#include "router/fake_worker_client.h"
#include "router/policies/policy.h"
#include "router/prefix_index.h"
#include "router/registry.h"
#include "router/worker_views.h"

namespace {

using kvmesh::BlockHash;
using namespace kvmesh::router;
using Clock = std::chrono::steady_clock;

// CPU time this thread has run, in microseconds (CLOCK_THREAD_CPUTIME_ID:
// time the hypervisor or the kernel gave to others does not count).
double ThreadCpuUs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) / 1e3;
}

// A "Key: value kB" line of a /proc/self file, in kB (-1: absent).
long ProcKb(const char* file, const std::string& key) {
  std::ifstream in(file);
  std::string k;
  long v = 0;
  while (in >> k) {
    if (k == key) {
      in >> v;
      return v;
    }
  }
  return -1;
}

long RssKb() { return ProcKb("/proc/self/status", "VmRSS:"); }

std::vector<BlockHash> RandomChain(std::mt19937_64& rng, int blocks) {
  std::vector<int32_t> tokens(static_cast<size_t>(blocks) * 16);
  for (int32_t& t : tokens) t = static_cast<int32_t>(rng() % 128000);
  return kvmesh::HashFullBlocks(kvmesh::RootHash("model"), tokens, 16);
}

double Seconds(Clock::time_point since) {
  return std::chrono::duration<double>(Clock::now() - since).count();
}

struct Percentiles {
  double p50, p90, p99, max;
};

Percentiles Summarize(std::vector<double> micros) {
  std::sort(micros.begin(), micros.end());
  auto at = [&](double p) { return micros[static_cast<size_t>(p * (micros.size() - 1))]; };
  return {at(0.5), at(0.9), at(0.99), micros.back()};
}

// Runs fn(thread) on `threads` threads and waits for them.
template <typename Fn>
void OnThreads(int threads, Fn fn) {
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t);
  for (std::thread& th : pool) th.join();
}

// A registry of `workers` fake workers of one model, every one healthy
// (slots 0..workers-1), each with a load report and an id, as the router's
// registry holds them once the workers answered.
std::unique_ptr<Registry> MakeRegistry(int workers, std::mt19937_64& rng) {
  kvmesh::SetLogLevel(kvmesh::LogLevel::kWarning);  // not a line per worker joining
  RegistryOptions options;
  options.make_client = [](const std::string& address, WorkerListener*) {
    return std::make_shared<FakeWorkerClient>(address);
  };
  auto registry = std::make_unique<Registry>(options);
  std::vector<std::string> addresses;
  for (int w = 0; w < workers; ++w) {
    addresses.push_back("10.0." + std::to_string(w / 250) + "." + std::to_string(w % 250) +
                        ":50051");
  }
  registry->SetStaticWorkers(addresses);
  kvmesh::TokenizerConfig vocab;  // a few tokens: the model's identity is all that matters here
  vocab.tokens = {"<unk>", "<s>", "</s>", "\u2581a", "a"};
  vocab.scores = {0, 0, 0, -1, -2};
  vocab.token_types = {2, 3, 3, 1, 1};
  vocab.token_attrs = {kvmesh::kTokenAttrUnknown, kvmesh::kTokenAttrControl,
                       kvmesh::kTokenAttrControl, kvmesh::kTokenAttrNormal,
                       kvmesh::kTokenAttrNormal};
  vocab.unk_id = 0;
  vocab.bos_id = 1;
  vocab.eos_id = 2;
  kvmesh::v1::InfoResponse info;
  info.set_model_name("model");
  info.set_model_digest("sha256:bench");
  info.set_block_size(16);
  info.set_context_length(4096);
  kvmesh::TokenizerConfigToSpec(vocab, info.mutable_tokenizer());
  std::map<std::string, std::shared_ptr<WorkerClient>> clients;
  for (const auto& c : registry->AllConnections()) clients[c->address()] = c;
  for (int w = 0; w < workers; ++w) {
    const std::shared_ptr<WorkerClient>& client = clients.at(addresses[w]);
    auto* fake = static_cast<FakeWorkerClient*>(client.get());
    kvmesh::v1::LoadResponse load;
    load.set_running(static_cast<uint32_t>(rng() % 8));
    load.set_prefill_tokens_per_s(8000 + static_cast<double>(rng() % 4000));
    load.set_kv_blocks_total(65536);
    load.set_kv_blocks_free(static_cast<uint32_t>(rng() % 65536));
    fake->set_load(load);
    info.set_worker_id("kvmesh-worker-" + std::to_string(w) + "-7f9c2d");
    fake->set_info(info);
    registry->OnWorkerInfo(fake, info);  // takes the next slot: w
    fake->set_healthy(true);
    registry->OnHealthChanged(fake, true);
  }
  auto probe = registry->Snapshot("model");
  bool in_order = probe.ok() && static_cast<int>(probe->healthy().size()) == workers;
  for (int w = 0; in_order && w < workers; ++w) {
    in_order =
        probe->healthy()[w].slot == w && probe->healthy()[w].worker->address() == addresses[w];
  }
  if (!in_order) {
    std::fprintf(
        stderr, "routing_cost: the registry does not hold %d healthy workers in slots 0..%d%s\n",
        workers, workers - 1, probe.ok() ? "" : (": " + probe.status().ToString()).c_str());
    std::exit(1);
  }
  return registry;
}

// Registry::Snapshot on `threads` routing threads at once, `rounds` each:
// microseconds per snapshot.
std::vector<double> TimeSnapshots(Registry& registry, int threads, int rounds) {
  std::vector<std::vector<double>> per_thread(threads);
  OnThreads(threads, [&](int t) {
    per_thread[t].reserve(rounds);
    for (int i = 0; i < rounds; ++i) {
      const auto t0 = Clock::now();
      auto snap = registry.Snapshot("model");
      if (!snap.ok()) std::abort();
      per_thread[t].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
  });
  std::vector<double> all;
  for (const auto& v : per_thread) all.insert(all.end(), v.begin(), v.end());
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  int64_t blocks = 10000000;
  int workers = 1000;
  int requests = 20000;
  int prompt_blocks = 128;  // a 2048-token prompt
  int threads = 2;
  double churn_seconds = 5;
  int sample = 64;  // the router's decision_sample
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--blocks")) blocks = std::atoll(argv[i + 1]);
    if (!std::strcmp(argv[i], "--workers")) workers = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--requests")) requests = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--prompt-blocks")) prompt_blocks = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--threads")) threads = std::atoi(argv[i + 1]);
    if (!std::strcmp(argv[i], "--churn-seconds")) churn_seconds = std::atof(argv[i + 1]);
    if (!std::strcmp(argv[i], "--sample")) sample = std::atoi(argv[i + 1]);
  }
  if (workers < 1 || workers > kMaxWorkersPerModel || prompt_blocks < 1 || threads < 1 ||
      blocks < prompt_blocks || requests < 1) {
    std::fprintf(stderr,
                 "routing_cost: --workers must be 1..%d, --prompt-blocks, --threads and "
                 "--requests at least 1, --blocks at least --prompt-blocks\n",
                 kMaxWorkersPerModel);
    return 2;
  }
  std::mt19937_64 rng(1);
  // Sessions of `prompt_blocks` blocks, session s on worker s % workers; a
  // spare chain per thread per 64 sessions for the churn phase.
  const int64_t sessions = blocks / prompt_blocks;
  std::vector<std::vector<BlockHash>> chains(sessions);
  for (auto& chain : chains) chain = RandomChain(rng, prompt_blocks);
  std::vector<std::vector<BlockHash>> spares(std::max<int64_t>(threads, sessions / 64));
  for (auto& chain : spares) chain = RandomChain(rng, prompt_blocks);

  std::unique_ptr<Registry> registry = MakeRegistry(workers, rng);
  PrefixIndex& index = registry->Snapshot("model")->group->index;
  const long rss0 = RssKb();
  // Fill: thread t carries the event streams of workers w % threads == t.
  const auto t_fill = Clock::now();
  OnThreads(threads, [&](int t) {
    for (int64_t s = 0; s < sessions; ++s) {
      const int w = static_cast<int>(s % workers);
      if (w % threads == t) index.AddExact(w, chains[s]);
    }
  });
  const double fill_s = Seconds(t_fill);
  const long rss1 = RssKb();
  const double index_mib = (rss1 - rss0) / 1024.0;
  const long huge_kb = ProcKb("/proc/self/smaps_rollup", "AnonHugePages:");
  const size_t indexed = index.size();

  // Churn: each step, a thread swaps one of its workers' sessions for one of
  // its spare chains (RemoveExact of a chain, AddExact of another).
  std::vector<std::vector<int64_t>> owned(threads);  // sessions, by event thread
  for (int64_t s = 0; s < sessions; ++s) owned[(s % workers) % threads].push_back(s);
  std::atomic<int64_t> churned{0};
  const auto t_churn = Clock::now();
  OnThreads(threads, [&](int t) {
    std::mt19937_64 local(100 + t);
    int64_t moved = 0;
    const size_t spare_count = spares.size() / threads;
    while (!owned[t].empty() && spare_count > 0 && Seconds(t_churn) < churn_seconds) {
      for (int i = 0; i < 16; ++i) {
        const int64_t s = owned[t][local() % owned[t].size()];
        const int w = static_cast<int>(s % workers);
        auto& spare = spares[(local() % spare_count) * threads + t];
        index.RemoveExact(w, chains[s]);
        index.AddExact(w, spare);
        std::swap(chains[s], spare);
        moved += 2 * prompt_blocks;
      }
    }
    churned += moved;
  });
  const double churn_s = Seconds(t_churn);

  WorkerSet all;
  for (int w = 0; w < workers; ++w) all.Add(w);
  auto policy = MakePrefixPolicy({});
  std::vector<double> total_us, snapshot_us, match_us, views_us, policy_us, floor_us, cpu_us,
      floor_cpu_us;
  uint64_t floor_state = 1;
  int hits = 0;
  for (int r = 0; r < requests; ++r) {
    // 80%: an existing session's first k blocks (a follow-up); 20%: new.
    std::vector<BlockHash> hashes;
    if (rng() % 5 != 0) {
      const auto& chain = chains[rng() % sessions];
      hashes.assign(chain.begin(), chain.begin() + 1 + static_cast<int64_t>(rng() % chain.size()));
    } else {
      hashes = RandomChain(rng, prompt_blocks);
    }
    const double c0 = ThreadCpuUs();
    const auto t0 = Clock::now();
    const kvmesh::StatusOr<ModelSnapshot> snapped = registry->Snapshot("model");
    const ModelSnapshot& snap = *snapped;
    const auto ts = Clock::now();
    const PrefixMatch match = snap.group->index.Match(hashes, all);
    // As RouterCore::PlanAttempt narrows a large fleet.
    const WorkerSet weighed =
        sample > 0 && workers > 2 * sample ? SampleCandidates(snap, all, match, sample, -1) : all;
    const auto t1 = Clock::now();
    std::vector<WorkerView> views;
    std::vector<const Candidate*> conns;
    BuildWorkerViews(snap, weighed, match, prompt_blocks, false, std::nullopt, &views, &conns);
    const auto t2 = Clock::now();
    const Decision d =
        policy->Choose({static_cast<int32_t>(hashes.size() * 16), views, hashes, 16});
    const auto t3 = Clock::now();
    cpu_us.push_back(ThreadCpuUs() - c0);
    auto us = [](auto a, auto b) {
      return std::chrono::duration<double, std::micro>(b - a).count();
    };
    total_us.push_back(us(t0, t3));
    snapshot_us.push_back(us(t0, ts));
    match_us.push_back(us(ts, t1));
    views_us.push_back(us(t1, t2));
    policy_us.push_back(us(t2, t3));
    hits += views[d.index].cached_tokens > 0;
    // The machine's own jitter: the same fixed computation every time.
    const double fc0 = ThreadCpuUs();
    const auto f0 = Clock::now();
    for (int k = 0; k < 13000; ++k) floor_state = floor_state * 6364136223846793005ull + 1;
    floor_us.push_back(us(f0, Clock::now()));
    floor_cpu_us.push_back(ThreadCpuUs() - fc0);
  }
  std::printf("routing_cost: %d workers, %zu indexed blocks (%lld sessions of %d blocks)\n",
              workers, indexed, static_cast<long long>(sessions), prompt_blocks);
  std::printf(
      "index memory: %.1f MiB (RSS growth), %.1f bytes per block; %.0f MiB of the process on "
      "huge pages\n",
      index_mib, index_mib * 1048576.0 / static_cast<double>(indexed), huge_kb / 1024.0);
  std::printf("ingest, %d event threads: fill %.2f M blocks/s (%.1f s); churn %.2f M blocks/s\n",
              threads, static_cast<double>(indexed) / fill_s / 1e6, fill_s,
              static_cast<double>(churned.load()) / churn_s / 1e6);
  std::printf("decision time, %d requests of up to %d blocks (routed to a holder: %.1f%%):\n",
              requests, prompt_blocks, 100.0 * hits / requests);
  const Percentiles total = Summarize(total_us);
  for (const auto& [name, part] :
       std::vector<std::pair<const char*, const std::vector<double>*>>{{"total", &total_us},
                                                                       {"snapshot", &snapshot_us},
                                                                       {"match", &match_us},
                                                                       {"views", &views_us},
                                                                       {"policy", &policy_us}}) {
    const Percentiles p = Summarize(*part);
    std::printf("  %-8s p50 %7.1f us   p90 %7.1f us   p99 %7.1f us   max %8.1f us\n", name, p.p50,
                p.p90, p.p99, p.max);
  }
  const Percentiles cpu = Summarize(cpu_us);
  std::printf(
      "  total, in this thread's CPU time (what the VM or kernel ran instead is not "
      "counted):\n         p50 %7.1f us   p90 %7.1f us   p99 %7.1f us   max %8.1f us\n",
      cpu.p50, cpu.p90, cpu.p99, cpu.max);
  const Percentiles floor = Summarize(floor_us);
  const Percentiles floor_cpu = Summarize(floor_cpu_us);
  std::printf(
      "noise floor (a fixed computation timed after each decision): p50 %.1f us, p90 %.1f us, "
      "p99 %.1f us, max %.1f us%s\n",
      floor.p50, floor.p90, floor.p99, floor.max, floor_state == 0 ? " " : "");
  std::printf(
      "noise floor in thread CPU time: p50 %.1f us, p90 %.1f us, p99 %.1f us, max %.1f us\n",
      floor_cpu.p50, floor_cpu.p90, floor_cpu.p99, floor_cpu.max);
  for (int t = 1; t <= threads; t = t == 1 && threads > 1 ? threads : t + threads) {
    const Percentiles snap_p = Summarize(TimeSnapshots(*registry, t, requests));
    std::printf(
        "registry snapshot (each request's first step), %d routing thread%s at once: p50 %.1f us, "
        "p90 %.1f us, p99 %.1f us, max %.1f us\n",
        t, t == 1 ? "" : "s", snap_p.p50, snap_p.p90, snap_p.p99, snap_p.max);
  }
  std::printf(
      "{\"p50_us\":%.2f,\"p90_us\":%.2f,\"p99_us\":%.2f,\"blocks\":%zu,\"workers\":%d,\"index_"
      "mib\":%.1f,\"fill_blocks_per_s\":%.0f,\"churn_blocks_per_s\":%.0f}\n",
      total.p50, total.p90, total.p99, indexed, workers, index_mib,
      static_cast<double>(indexed) / fill_s, static_cast<double>(churned.load()) / churn_s);
  return 0;
}
