// Chat decodes while long prompts arrive, through a kvmesh-router: what
// disaggregated prefill is for. CHAT streams each generate reply-tokens
// tokens for short prompts, again and again; the gaps between their tokens
// are the decode inter-token latency (ITL). The run has two phases of
// --phase-seconds each: chat alone (the no-prefill ITL), then chat while a
// long prompt of --long-tokens arrives every --long-interval-ms (each
// generating 4 tokens). Reports for each phase the ITL p50/p99/p99.9 over
// every token gap, the TPOT p99 over chat requests (a request's decode time
// over its tokens: a prefill that stalls a step shows here, where a single
// long gap among thousands of short ones barely moves the ITL p99), the
// chats' and the long prompts' TTFT, and which workers served what.
//
//   build/bench/disagg_mix --router 127.0.0.1:50050 [--chat 4] [--reply-tokens 64]
//       [--long-tokens 3000] [--long-interval-ms 1500] [--phase-seconds 10]
//
// Last line: one JSON object.
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "kvmesh/v1/inference.grpc.pb.h"

namespace {

using Clock = std::chrono::steady_clock;

double MsSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * (v.size() - 1))];
}

struct Phase {
  std::vector<double> itl_ms, tpot_ms, chat_ttft_ms, long_ttft_ms;
  std::map<std::string, int> chat_workers, long_workers;
  int failures = 0;
};

// One streamed request; token gaps go to `itl` (if given). Returns false on
// an error.
bool Stream(kvmesh::v1::Inference::Stub& stub, const std::vector<int32_t>& prompt, int max_tokens,
            double* ttft_ms, std::vector<double>* itl, std::string* worker) {
  kvmesh::v1::GenerateTextRequest req;
  req.mutable_prompt_tokens()->Assign(prompt.begin(), prompt.end());
  req.mutable_options()->set_max_tokens(max_tokens);
  req.mutable_options()->set_ignore_eos(true);
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  grpc::ClientContext ctx;
  const auto t0 = Clock::now();
  auto reader = stub.Generate(&ctx, req);
  kvmesh::v1::GenerateTextResponse m;
  Clock::time_point last{};
  *ttft_ms = -1;
  while (reader->Read(&m)) {
    if (!m.worker().empty()) *worker = m.worker();
    if (m.tokens_size() == 0) continue;
    const auto now = Clock::now();
    if (*ttft_ms < 0) {
      *ttft_ms = MsSince(t0);
    } else if (itl) {
      const double gap = std::chrono::duration<double, std::milli>(now - last).count();
      for (int i = 0; i < m.tokens_size(); ++i) itl->push_back(gap / m.tokens_size());
    }
    last = now;
  }
  return reader->Finish().ok();
}

std::vector<int32_t> Random(std::mt19937& rng, int n) {
  std::vector<int32_t> out = {1};
  for (int i = 0; i < n; ++i) out.push_back(260 + static_cast<int32_t>(rng() % 250));
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string router = "127.0.0.1:50050";
  int chat = 4, reply_tokens = 64, long_tokens = 3000, long_interval_ms = 1500, phase_seconds = 10;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    const int v = std::atoi(argv[i + 1]);
    if (a == "--router")
      router = argv[i + 1];
    else if (a == "--chat")
      chat = v;
    else if (a == "--reply-tokens")
      reply_tokens = v;
    else if (a == "--long-tokens")
      long_tokens = v;
    else if (a == "--long-interval-ms")
      long_interval_ms = v;
    else if (a == "--phase-seconds")
      phase_seconds = v;
  }
  auto stub = kvmesh::v1::Inference::NewStub(
      grpc::CreateChannel(router, grpc::InsecureChannelCredentials()));
  Phase phases[2];
  std::mutex mu;
  std::atomic<int> phase{0};
  std::atomic<bool> done{false};
  std::vector<std::thread> threads;
  for (int c = 0; c < chat; ++c) {
    threads.emplace_back([&, c] {
      std::mt19937 rng(10 + c);
      while (!done) {
        const int p = phase.load();
        double ttft;
        std::vector<double> itl;
        std::string worker;
        const bool ok = Stream(*stub, Random(rng, 32), reply_tokens, &ttft, &itl, &worker);
        std::lock_guard<std::mutex> lock(mu);
        if (p != phase.load() && !done) continue;  // straddled the phases
        Phase& ph = phases[p];
        if (!ok) {
          ++ph.failures;
          continue;
        }
        ph.itl_ms.insert(ph.itl_ms.end(), itl.begin(), itl.end());
        if (!itl.empty()) {
          double sum = 0;
          for (double g : itl) sum += g;
          ph.tpot_ms.push_back(sum / itl.size());
        }
        ph.chat_ttft_ms.push_back(ttft);
        ++ph.chat_workers[worker];
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(phase_seconds));
  phase = 1;
  std::vector<std::thread> longs;
  const auto end = Clock::now() + std::chrono::seconds(phase_seconds);
  for (int n = 0; Clock::now() < end; ++n) {
    longs.emplace_back([&, n] {
      std::mt19937 rng(1000 + n);
      double ttft;
      std::string worker;
      const bool ok = Stream(*stub, Random(rng, long_tokens), 4, &ttft, nullptr, &worker);
      std::lock_guard<std::mutex> lock(mu);
      if (!ok) {
        ++phases[1].failures;
        return;
      }
      phases[1].long_ttft_ms.push_back(ttft);
      ++phases[1].long_workers[worker];
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(long_interval_ms));
  }
  for (auto& t : longs) t.join();
  done = true;
  for (auto& t : threads) t.join();

  auto workers = [](const std::map<std::string, int>& m) {
    std::string out;
    for (auto& [w, n] : m) out += (out.empty() ? "" : " ") + w + "=" + std::to_string(n);
    return out;
  };
  for (int p = 0; p < 2; ++p) {
    const Phase& ph = phases[p];
    std::printf(
        "%s: ITL p50 %.2f ms p99 %.2f ms p99.9 %.2f ms (%zu gaps); TPOT p99 %.2f ms (%zu "
        "requests); chat TTFT p50 %.1f ms p90 %.1f ms; chats on %s",
        p == 0 ? "chat alone" : "with long prompts", Quantile(ph.itl_ms, 0.5),
        Quantile(ph.itl_ms, 0.99), Quantile(ph.itl_ms, 0.999), ph.itl_ms.size(),
        Quantile(ph.tpot_ms, 0.99), ph.tpot_ms.size(), Quantile(ph.chat_ttft_ms, 0.5),
        Quantile(ph.chat_ttft_ms, 0.9), workers(ph.chat_workers).c_str());
    if (p == 1) {
      std::printf("; %zu long prompts, TTFT p50 %.1f ms p90 %.1f ms, on %s", ph.long_ttft_ms.size(),
                  Quantile(ph.long_ttft_ms, 0.5), Quantile(ph.long_ttft_ms, 0.9),
                  workers(ph.long_workers).c_str());
    }
    std::printf("; %d failed\n", ph.failures);
  }
  std::printf(
      "{\"itl_p50_alone_ms\":%.3f,\"itl_p99_alone_ms\":%.3f,\"itl_p999_alone_ms\":%.3f,"
      "\"tpot_p99_alone_ms\":%.3f,\"itl_p50_mixed_ms\":%.3f,\"itl_p99_mixed_ms\":%.3f,"
      "\"itl_p999_mixed_ms\":%.3f,\"tpot_p99_mixed_ms\":%.3f,"
      "\"chat_ttft_p90_alone_ms\":%.2f,\"chat_ttft_p90_mixed_ms\":%.2f,"
      "\"long_ttft_p50_ms\":%.2f,\"long_ttft_p90_ms\":%.2f,\"long_prompts\":%zu,\"failures\":%d}\n",
      Quantile(phases[0].itl_ms, 0.5), Quantile(phases[0].itl_ms, 0.99),
      Quantile(phases[0].itl_ms, 0.999), Quantile(phases[0].tpot_ms, 0.99),
      Quantile(phases[1].itl_ms, 0.5), Quantile(phases[1].itl_ms, 0.99),
      Quantile(phases[1].itl_ms, 0.999), Quantile(phases[1].tpot_ms, 0.99),
      Quantile(phases[0].chat_ttft_ms, 0.9), Quantile(phases[1].chat_ttft_ms, 0.9),
      Quantile(phases[1].long_ttft_ms, 0.5), Quantile(phases[1].long_ttft_ms, 0.9),
      phases[1].long_ttft_ms.size(), phases[0].failures + phases[1].failures);
  return phases[0].failures + phases[1].failures == 0 ? 0 : 1;
}
