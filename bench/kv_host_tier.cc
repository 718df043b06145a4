// The agent scenario in miniature, on two workers measured side by side:
// one with a host-RAM KV tier (--kv-host-memory), one without, both with a
// device tier too small to keep a session's prefix while other sessions run.
//
// Each round, on each worker in turn (the order alternates by round):
//   1. the session's request: a fresh P-token prefix + a suffix (cold);
//   2. other sessions' requests, O tokens each, K of them, which push the
//      prefix out of the device tier;
//   3. the session's next request: the same prefix + another suffix.
// Reports, as medians over the rounds, the time to first token (the
// worker's own measurement) and the prompt tokens served from the cache of
// step 3 on each worker, against step 1's cold TTFT.
//
//   build/bench/kv_host_tier --with 127.0.0.1:50061 --without 127.0.0.1:50062
//       [--prefix-tokens 16384] [--other-tokens 4096] [--others 2] [--rounds 3]
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
  bool ok = false;
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
  const grpc::Status status = reader->Finish();
  if (!status.ok()) {
    std::fprintf(stderr, "kv_host_tier: request failed: %s\n", status.error_message().c_str());
    return s;
  }
  s.ok = true;
  s.ttft_ms = last.timings().ttft_ms();
  s.prompt = last.usage().prompt_tokens();
  s.cached = last.usage().cached_tokens();
  return s;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

struct Side {
  std::string address;
  std::unique_ptr<kvmesh::v1::Worker::Stub> stub;
  std::vector<double> cold_ttft, hit_ttft, hit_cached;
};

}  // namespace

int main(int argc, char** argv) {
  std::string with = "127.0.0.1:50061", without = "127.0.0.1:50062";
  int prefix = 16384, other = 4096, others = 2, rounds = 3, suffix = 16;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--with") {
      with = argv[i + 1];
    } else if (a == "--without") {
      without = argv[i + 1];
    } else if (a == "--prefix-tokens") {
      prefix = std::atoi(argv[i + 1]);
    } else if (a == "--other-tokens") {
      other = std::atoi(argv[i + 1]);
    } else if (a == "--others") {
      others = std::atoi(argv[i + 1]);
    } else if (a == "--rounds") {
      rounds = std::atoi(argv[i + 1]);
    } else {
      std::fprintf(stderr, "kv_host_tier: unknown option %s\n", a.c_str());
      return 2;
    }
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  Side sides[2];
  sides[0].address = with;
  sides[1].address = without;
  int n_vocab = 0;
  for (Side& s : sides) {
    s.stub = kvmesh::v1::Worker::NewStub(
        grpc::CreateCustomChannel(s.address, grpc::InsecureChannelCredentials(), args));
    grpc::ClientContext ctx;
    kvmesh::v1::InfoResponse info;
    if (!s.stub->Info(&ctx, {}, &info).ok()) {
      std::fprintf(stderr, "kv_host_tier: cannot reach %s\n", s.address.c_str());
      return 1;
    }
    n_vocab = static_cast<int>(info.n_vocab());
  }
  std::mt19937 rng(7);
  auto random = [&](int n) {
    std::vector<int32_t> v(n);
    for (int32_t& t : v) t = 3 + static_cast<int32_t>(rng() % (n_vocab - 3));
    return v;
  };
  auto with_suffix = [&](std::vector<int32_t> base) {
    const auto s = random(suffix);
    base.insert(base.end(), s.begin(), s.end());
    return base;
  };
  for (int r = 0; r < rounds; ++r) {
    std::vector<int32_t> base = {1};
    const auto p = random(prefix - 1);
    base.insert(base.end(), p.begin(), p.end());
    std::vector<std::vector<int32_t>> other_prompts;
    for (int k = 0; k < others; ++k) {
      auto o = random(other - 1);
      o.insert(o.begin(), 1);
      other_prompts.push_back(std::move(o));
    }
    for (int j = 0; j < 2; ++j) {
      Side& s = sides[(r + j) % 2];  // alternate which worker goes first
      const Shot cold = Send(*s.stub, with_suffix(base));
      for (const auto& o : other_prompts) Send(*s.stub, o);
      const Shot hit = Send(*s.stub, with_suffix(base));
      if (!cold.ok || !hit.ok) return 1;
      s.cold_ttft.push_back(cold.ttft_ms);
      s.hit_ttft.push_back(hit.ttft_ms);
      s.hit_cached.push_back(static_cast<double>(hit.cached) / hit.prompt);
      std::fprintf(stderr, "round %d %s: cold %.0f ms, again %.0f ms, cached %u/%u\n", r,
                   j == 0 ? "first " : "second", cold.ttft_ms, hit.ttft_ms, hit.cached, hit.prompt);
    }
  }
  const Side& h = sides[0];
  const Side& n = sides[1];
  std::printf(
      "%d-token prefix, then %d other prompts of %d tokens, then the prefix again; %d "
      "rounds (medians)\n",
      prefix, others, other, rounds);
  std::printf("| worker | cold TTFT ms | TTFT again ms | cached again | cold / again |\n");
  std::printf("|---|---:|---:|---:|---:|\n");
  for (const Side* s : {&h, &n}) {
    std::printf("| %s | %.0f | %.0f | %.1f%% | %.1fx |\n",
                s == &h ? "with host tier" : "without host tier", Median(s->cold_ttft),
                Median(s->hit_ttft), 100.0 * Median(s->hit_cached),
                Median(s->cold_ttft) / std::max(1e-9, Median(s->hit_ttft)));
  }
  std::printf(
      "{\"with_cold_ttft_ms\":%.1f,\"with_hit_ttft_ms\":%.1f,\"with_hit_cached\":%.4f,"
      "\"without_cold_ttft_ms\":%.1f,\"without_hit_ttft_ms\":%.1f,\"without_hit_cached\":%.4f}\n",
      Median(h.cold_ttft), Median(h.hit_ttft), Median(h.hit_cached), Median(n.cold_ttft),
      Median(n.hit_ttft), Median(n.hit_cached));
  return 0;
}
