// kvmesh_bandwidth_probe: how fast this machine streams memory into the
// cores - the denominator of the decode roofline. Each of 1 and 2 threads (or
// --threads) reads its share of a buffer much larger than the last-level
// cache with AVX-512 loads (AVX2 where AVX-512 is missing), repeatedly; the
// median over --repetitions passes is reported in GB/s (1e9 bytes/s).
//
//   kvmesh_bandwidth_probe [--mib 2048] [--repetitions 7] [--threads 1,2] [--json]
//
// With --json the last line is {"read_gbps": {"1": ..., "2": ...}, ...}.
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/read_loops.h"
#include "worker/kernels/cpu/cpu_features.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  size_t mib = 2048;
  int repetitions = 7;
  std::vector<int> threads = {1, 2};
  bool json = false;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// GB/s of one pass of `threads` threads over `bytes` at `data`; all threads
// start together and the pass ends when the last one finishes.
double Pass(const uint8_t* data, size_t bytes, int threads, bool avx512,
            std::atomic<uint64_t>* sink) {
  const size_t share = bytes / threads / 256 * 256;
  std::atomic<int> ready{0};
  std::atomic<bool> go{false};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ready.fetch_add(1);
      while (!go.load(std::memory_order_acquire)) {
      }
      const uint8_t* p = data + t * share;
      *sink += avx512 ? kvmesh::bench::ReadAvx512(p, share) : kvmesh::bench::ReadAvx2(p, share);
    });
  }
  while (ready.load() < threads) {
  }
  const auto start = Clock::now();
  go.store(true, std::memory_order_release);
  for (std::thread& t : pool) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return share * threads / seconds / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--mib") {
      args.mib = std::stoul(next());
    } else if (a == "--repetitions") {
      args.repetitions = std::max(1, std::stoi(next()));
    } else if (a == "--threads") {
      args.threads.clear();
      const std::string list = next();
      for (size_t s = 0; s <= list.size();) {
        const size_t comma = list.find(',', s);
        args.threads.push_back(std::max(1, std::stoi(list.substr(s, comma - s))));
        if (comma == std::string::npos) break;
        s = comma + 1;
      }
    } else if (a == "--json") {
      args.json = true;
    } else {
      std::fprintf(stderr,
                   "usage: kvmesh_bandwidth_probe [--mib N] [--repetitions R] "
                   "[--threads 1,2] [--json]\n");
      return 2;
    }
  }
  const bool avx512 = kvmesh::kernels::HostIsa() == kvmesh::kernels::Isa::kAvx512;
  if (!avx512 && kvmesh::kernels::HostIsa() != kvmesh::kernels::Isa::kAvx2) {
    std::fprintf(stderr, "the probe needs AVX2 or AVX-512\n");
    return 1;
  }
  const size_t bytes = args.mib << 20;
  void* mem = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::perror("mmap");
    return 1;
  }
  madvise(mem, bytes, MADV_HUGEPAGE);
  uint8_t* data = static_cast<uint8_t*>(mem);
  for (size_t i = 0; i < bytes; i += 4096) data[i] = static_cast<uint8_t>(i >> 12);  // fault in
  std::atomic<uint64_t> sink{0};
  std::string json = "{\"loop\":\"" + std::string(avx512 ? "avx512" : "avx2") +
                     "\",\"mib\":" + std::to_string(args.mib) + ",\"read_gbps\":{";
  for (size_t k = 0; k < args.threads.size(); ++k) {
    const int threads = args.threads[k];
    Pass(data, bytes, threads, avx512, &sink);  // warm-up
    std::vector<double> runs;
    for (int r = 0; r < args.repetitions; ++r)
      runs.push_back(Pass(data, bytes, threads, avx512, &sink));
    const double median = Median(runs);
    std::printf("read %s, %d thread%s: %.2f GB/s median of %d (min %.2f, max %.2f)\n",
                avx512 ? "avx512" : "avx2", threads, threads == 1 ? "" : "s", median,
                args.repetitions, *std::min_element(runs.begin(), runs.end()),
                *std::max_element(runs.begin(), runs.end()));
    char entry[64];
    std::snprintf(entry, sizeof entry, "%s\"%d\":%.3f", k ? "," : "", threads, median);
    json += entry;
  }
  json += "}}";
  if (args.json) std::printf("%s\n", json.c_str());
  munmap(mem, bytes);
  return sink.load() == 42 ? 3 : 0;  // keeps the checksum alive
}
