// Worker throughput at several concurrency levels: C client streams, each
// sending greedy requests back to back to a kvmesh-worker over gRPC.
//
//   build/bench/worker_throughput --worker 127.0.0.1:50051 [--concurrency 1,4,16]
//       [--prompt-tokens 64] [--max-tokens 64] [--requests-per-stream 4]
//
// Each run and level uses its own cache salt, so no level reuses the prompts
// an earlier one (same seeds) left in the cache.
//
// Per level: total generated tokens/s, mean time to first token, mean and p90
// inter-token latency (gap between streamed tokens within a request). Last
// line: one JSON object with every level.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <numeric>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kvmesh/v1/worker.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

struct Level {
  int concurrency = 0;
  double tokens_per_s = 0;
  double ttft_ms_mean = 0;
  double itl_ms_mean = 0;
  double itl_ms_p90 = 0;
  int requests = 0;
  int failures = 0;
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

Level Run(kvmesh::v1::Worker::Stub& stub, int concurrency, int prompt_tokens, int max_tokens,
          int per_stream, uint32_t n_vocab, const std::string& salt) {
  std::mutex mu;
  std::vector<double> ttfts, itls;
  int64_t tokens = 0;
  int failures = 0;
  const auto start = Clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < concurrency; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937 rng(1000 + c);
      for (int r = 0; r < per_stream; ++r) {
        kvmesh::v1::GenerateRequest req;
        req.add_prompt_tokens(1);
        for (int i = 1; i < prompt_tokens; ++i) req.add_prompt_tokens(3 + rng() % (n_vocab - 3));
        req.mutable_sampling()->set_temperature(0);
        req.set_max_tokens(max_tokens);
        req.set_ignore_eos(true);
        // Every level and run computes its prompts: no hits on a cache that
        // an earlier level (same seeds, same prompts) or run left behind.
        req.set_cache_salt(salt);
        grpc::ClientContext ctx;
        const auto t0 = Clock::now();
        auto reader = stub.Generate(&ctx, req);
        kvmesh::v1::GenerateResponse resp;
        std::vector<double> local_itl;
        Clock::time_point last{};
        double ttft = -1;
        int64_t got = 0;
        while (reader->Read(&resp)) {
          if (resp.tokens_size() == 0) continue;
          const auto now = Clock::now();
          if (ttft < 0) {
            ttft = Ms(now - t0);
          } else {
            local_itl.push_back(Ms(now - last));
          }
          last = now;
          got += resp.tokens_size();
        }
        const bool ok = reader->Finish().ok();
        std::lock_guard<std::mutex> lock(mu);
        if (!ok) {
          ++failures;
          continue;
        }
        tokens += got;
        if (ttft >= 0) ttfts.push_back(ttft);
        itls.insert(itls.end(), local_itl.begin(), local_itl.end());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  Level l;
  l.concurrency = concurrency;
  l.tokens_per_s = tokens / seconds;
  l.requests = concurrency * per_stream;
  l.failures = failures;
  if (!ttfts.empty())
    l.ttft_ms_mean = std::accumulate(ttfts.begin(), ttfts.end(), 0.0) / ttfts.size();
  if (!itls.empty()) {
    l.itl_ms_mean = std::accumulate(itls.begin(), itls.end(), 0.0) / itls.size();
    std::sort(itls.begin(), itls.end());
    l.itl_ms_p90 = itls[static_cast<size_t>(0.9 * (itls.size() - 1))];
  }
  return l;
}

}  // namespace

int main(int argc, char** argv) {
  std::string worker = "127.0.0.1:50051";
  std::string levels = "1,4,16";
  int prompt_tokens = 64, max_tokens = 64, per_stream = 4;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--worker")
      worker = argv[i + 1];
    else if (a == "--concurrency")
      levels = argv[i + 1];
    else if (a == "--prompt-tokens")
      prompt_tokens = std::atoi(argv[i + 1]);
    else if (a == "--max-tokens")
      max_tokens = std::atoi(argv[i + 1]);
    else if (a == "--requests-per-stream")
      per_stream = std::atoi(argv[i + 1]);
  }
  // Info carries the whole tokenizer (megabytes for a 128k vocabulary).
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto stub = kvmesh::v1::Worker::NewStub(
      grpc::CreateCustomChannel(worker, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ictx;
  ictx.set_wait_for_ready(true);
  ictx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  kvmesh::v1::InfoResponse info;
  if (grpc::Status st = stub->Info(&ictx, {}, &info); !st.ok()) {
    std::fprintf(stderr, "worker_throughput: cannot reach %s: %s\n", worker.c_str(),
                 st.error_message().c_str());
    return 1;
  }
  std::printf("model %s (%s), prompt %d tokens, %d generated per request, %d requests per stream\n",
              info.model_name().c_str(), info.arch().c_str(), prompt_tokens, max_tokens,
              per_stream);
  std::printf("%-12s %14s %12s %12s %12s %9s\n", "concurrency", "tokens/s", "ttft ms", "itl ms",
              "itl p90 ms", "failures");
  std::ostringstream json;
  json << "{\"model\":\"" << info.model_name() << "\",\"levels\":[";
  std::istringstream in(levels);
  std::string item;
  bool first = true;
  const std::string run_salt = "worker_throughput-" + std::to_string(std::random_device{}());
  while (std::getline(in, item, ',')) {
    const Level l = Run(*stub, std::atoi(item.c_str()), prompt_tokens, max_tokens, per_stream,
                        info.n_vocab(), run_salt + "-" + item);
    std::printf("%-12d %14.1f %12.1f %12.2f %12.2f %9d\n", l.concurrency, l.tokens_per_s,
                l.ttft_ms_mean, l.itl_ms_mean, l.itl_ms_p90, l.failures);
    json << (first ? "" : ",") << "{\"concurrency\":" << l.concurrency
         << ",\"tokens_per_s\":" << l.tokens_per_s << ",\"ttft_ms\":" << l.ttft_ms_mean
         << ",\"itl_ms\":" << l.itl_ms_mean << ",\"itl_p90_ms\":" << l.itl_ms_p90 << "}";
    first = false;
  }
  json << "]}";
  std::printf("%s\n", json.str().c_str());
  return 0;
}
