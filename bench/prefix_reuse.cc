// Prefix reuse on one worker: for each of R rounds, a cold request (a fresh
// P-token prefix + a suffix) and then a warm one (the same prefix + another
// suffix). Reports prompt tokens computed and time to first token, cold vs
// warm (medians over the rounds; the worker's own TTFT from its timings).
//
//   build/bench/prefix_reuse --worker 127.0.0.1:50051 [--prefix-tokens 400]
//       [--suffix-tokens 16] [--rounds 8]
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "kvmesh/v1/worker.grpc.pb.h"

namespace {

struct Shot {
  double ttft_ms = 0;
  uint32_t prompt = 0;
  uint32_t cached = 0;
};

Shot Send(kvmesh::v1::Worker::Stub& stub, const std::vector<int32_t>& prompt) {
  kvmesh::v1::GenerateRequest req;
  req.mutable_prompt_tokens()->Assign(prompt.begin(), prompt.end());
  req.mutable_sampling()->set_temperature(0);
  req.set_max_tokens(1);
  grpc::ClientContext ctx;
  auto reader = stub.Generate(&ctx, req);
  kvmesh::v1::GenerateResponse m, last;
  while (reader->Read(&m)) last = m;
  Shot s;
  if (!reader->Finish().ok()) return s;
  s.ttft_ms = last.timings().ttft_ms();
  s.prompt = last.usage().prompt_tokens();
  s.cached = last.usage().cached_tokens();
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string worker = "127.0.0.1:50051";
  int prefix = 400, suffix = 16, rounds = 8;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--worker")
      worker = argv[i + 1];
    else if (a == "--prefix-tokens")
      prefix = std::atoi(argv[i + 1]);
    else if (a == "--suffix-tokens")
      suffix = std::atoi(argv[i + 1]);
    else if (a == "--rounds")
      rounds = std::atoi(argv[i + 1]);
  }
  // Info carries the whole tokenizer (megabytes for a 128k vocabulary).
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  auto stub = kvmesh::v1::Worker::NewStub(
      grpc::CreateCustomChannel(worker, grpc::InsecureChannelCredentials(), args));
  grpc::ClientContext ictx;
  kvmesh::v1::InfoResponse info;
  if (!stub->Info(&ictx, {}, &info).ok()) {
    std::fprintf(stderr, "prefix_reuse: cannot reach %s\n", worker.c_str());
    return 1;
  }
  std::mt19937 rng(3);
  auto random = [&](int n) {
    std::vector<int32_t> v(n);
    for (int32_t& t : v) t = 3 + static_cast<int32_t>(rng() % (info.n_vocab() - 3));
    return v;
  };
  std::vector<double> cold_ttft, warm_ttft, cold_computed, warm_computed;
  for (int r = 0; r < rounds; ++r) {
    std::vector<int32_t> base = {1};
    const auto p = random(prefix - 1);
    base.insert(base.end(), p.begin(), p.end());
    auto cold = base;
    auto s1 = random(suffix);
    cold.insert(cold.end(), s1.begin(), s1.end());
    auto warm = base;
    auto s2 = random(suffix);
    warm.insert(warm.end(), s2.begin(), s2.end());
    const Shot c = Send(*stub, cold);
    const Shot w = Send(*stub, warm);
    cold_ttft.push_back(c.ttft_ms);
    warm_ttft.push_back(w.ttft_ms);
    cold_computed.push_back(c.prompt - c.cached);
    warm_computed.push_back(w.prompt - w.cached);
  }
  std::printf("model %s: %d-token shared prefix + %d-token suffix, %d rounds (medians)\n",
              info.model_name().c_str(), prefix, suffix, rounds);
  std::printf("  cold: %4.0f prompt tokens computed, time to first token %7.2f ms\n",
              Median(cold_computed), Median(cold_ttft));
  std::printf(
      "  warm: %4.0f prompt tokens computed, time to first token %7.2f ms  (%.1fx faster)\n",
      Median(warm_computed), Median(warm_ttft),
      Median(cold_ttft) / std::max(1e-9, Median(warm_ttft)));
  std::printf(
      "{\"cold_computed\":%.0f,\"warm_computed\":%.0f,\"cold_ttft_ms\":%.3f,\"warm_ttft_ms\":%.3f}"
      "\n",
      Median(cold_computed), Median(warm_computed), Median(cold_ttft), Median(warm_ttft));
  return 0;
}
