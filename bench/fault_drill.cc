// The client side of bench/fault_drill.sh: steady streaming load through a
// kvmesh-router while the script breaks workers and the router, the fault
// knob of WorkerAdmin, and the per-fault report.
//
//   fault_drill load --router HOST:PORT --streams 64 --seconds 90 --out records.tsv
//       [--max-tokens 16] [--worker HOST:PORT: straight to a worker instead]
//       [--http HOST:PORT: through the router's HTTP gateway, OpenAI streaming]
//       64 client threads, each sending one greedy streaming Generate after
//       another (a shared 64-token prefix out of 16, then 8 tokens of its
//       own; 16 new tokens) until the time is up; one line per request:
//       start_ms first_token_ms end_ms tokens grpc_code worker message
//       (epoch milliseconds; first_token_ms -1 when no token arrived).
//   fault_drill inject --worker HOST:PORT [--step-delay-ms N] [--drop-kv-event-batches N]
//   fault_drill report --records records.tsv [--marks marks.tsv | --label TEXT]
//       marks: one "epoch_ms label" line per fault, in order; prints, per
//       phase (from one mark to the next; a request belongs to the phase in
//       which it ended, when its client learned the outcome), the requests,
//       those that failed before their first token (lost: nothing reached
//       the client) and after it (a stream cut short), TTFT p50/p99/max, when
//       errors stopped, each worker's share of the answers, and what clients
//       saw.
#include <grpcpp/grpcpp.h>
#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kvmesh/v1/inference.grpc.pb.h"
#include "kvmesh/v1/worker.grpc.pb.h"

namespace {

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::map<std::string, std::string> Flags(int argc, char** argv) {
  std::map<std::string, std::string> out;
  for (int i = 2; i + 1 < argc; i += 2) out[argv[i]] = argv[i + 1];
  return out;
}

std::string Flag(const std::map<std::string, std::string>& f, const std::string& name,
                 const std::string& fallback) {
  auto it = f.find(name);
  return it == f.end() ? fallback : it->second;
}

struct Record {
  int64_t start = 0, first_token = -1, end = 0;
  int tokens = 0;
  int code = 0;
  std::string worker, message;
};

// One request's prompt: a shared 64-token prefix out of 16, then 8 tokens
// of its own.
std::vector<int32_t> Prompt(const std::vector<std::vector<int32_t>>& prefixes, std::mt19937& rng) {
  std::vector<int32_t> prompt = prefixes[rng() % prefixes.size()];
  for (int i = 0; i < 8; ++i) prompt.push_back(260 + static_cast<int32_t>(rng() % 250));
  return prompt;
}

// A streaming Generate through a router's Inference API.
Record ThroughRouter(kvmesh::v1::Inference::Stub& stub, const std::vector<int32_t>& prompt,
                     int max_tokens) {
  kvmesh::v1::GenerateTextRequest req;
  req.mutable_prompt_tokens()->Assign(prompt.begin(), prompt.end());
  req.mutable_options()->set_max_tokens(max_tokens);
  req.mutable_options()->set_ignore_eos(true);
  req.mutable_options()->mutable_sampling()->set_temperature(0);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  Record r;
  r.start = NowMs();
  auto reader = stub.Generate(&ctx, req);
  kvmesh::v1::GenerateTextResponse m;
  while (reader->Read(&m)) {
    if (m.tokens_size() > 0 && r.first_token < 0) r.first_token = NowMs();
    r.tokens += m.tokens_size();
    if (!m.worker().empty()) r.worker = m.worker();
  }
  const grpc::Status s = reader->Finish();
  r.end = NowMs();
  r.code = static_cast<int>(s.error_code());
  r.message = s.error_message();
  return r;
}

// The same request straight to a worker (the router's added latency is the
// difference at the same load per worker).
Record StraightToWorker(kvmesh::v1::Worker::Stub& stub, const std::vector<int32_t>& prompt,
                        int max_tokens, const std::string& worker) {
  kvmesh::v1::GenerateRequest req;
  req.mutable_prompt_tokens()->Assign(prompt.begin(), prompt.end());
  req.set_max_tokens(max_tokens);
  req.set_ignore_eos(true);
  req.mutable_sampling()->set_temperature(0);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  Record r;
  r.start = NowMs();
  r.worker = worker;
  auto reader = stub.Generate(&ctx, req);
  kvmesh::v1::GenerateResponse m;
  while (reader->Read(&m)) {
    if (m.tokens_size() > 0 && r.first_token < 0) r.first_token = NowMs();
    r.tokens += m.tokens_size();
  }
  const grpc::Status s = reader->Finish();
  r.end = NowMs();
  r.code = static_cast<int>(s.error_code());
  r.message = s.error_message();
  return r;
}

// The same request as an OpenAI streaming completion through the router's
// HTTP gateway (one connection per request, as most clients do). The record's
// code is 0 for HTTP 200, else the HTTP status; its message the body's start
// and, on a 429, whether Retry-After came.
Record OverHttp(const std::string& gateway, const std::vector<int32_t>& prompt, int max_tokens) {
  const size_t colon = gateway.rfind(':');
  httplib::Client client(gateway.substr(0, colon), std::stoi(gateway.substr(colon + 1)));
  client.set_read_timeout(60);
  nlohmann::json body = {{"prompt", prompt},
                         {"max_tokens", max_tokens},
                         {"temperature", 0},
                         {"stream", true},
                         {"ignore_eos", true}};
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = body.dump();
  req.set_header("Content-Type", "application/json");
  Record r;
  std::string error_body;
  int status = 0;
  req.response_handler = [&](const httplib::Response& res) {
    status = res.status;
    if (res.status == 429)
      error_body =
          res.has_header("Retry-After") ? "429 with Retry-After " : "429 without Retry-After ";
    return true;
  };
  req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) {
    const std::string_view chunk(data, length);
    if (status != 200) {
      error_body.append(chunk.substr(0, 120));
      return true;
    }
    // Each completion chunk carries text; the first one is the first token.
    if (r.first_token < 0 && chunk.find("\"text\"") != std::string_view::npos)
      r.first_token = NowMs();
    for (size_t at = chunk.find("\"text\""); at != std::string_view::npos;
         at = chunk.find("\"text\"", at + 1)) {
      ++r.tokens;
    }
    return true;
  };
  r.start = NowMs();
  const httplib::Result res = client.send(req);
  r.end = NowMs();
  r.worker = "http";
  if (!res) {
    r.code = -1;
    r.message = "no response: " + httplib::to_string(res.error());
  } else if (status != 200) {
    r.code = status;
    r.message = error_body;
  }
  return r;
}

int Load(const std::map<std::string, std::string>& flags) {
  const std::string router = Flag(flags, "--router", "127.0.0.1:50050");
  const std::string worker = Flag(flags, "--worker", "");  // set: straight to this worker
  const std::string http = Flag(flags, "--http", "");      // set: the router's HTTP gateway
  const int streams = std::atoi(Flag(flags, "--streams", "64").c_str());
  const int seconds = std::atoi(Flag(flags, "--seconds", "60").c_str());
  const int max_tokens = std::atoi(Flag(flags, "--max-tokens", "16").c_str());
  std::ofstream out(Flag(flags, "--out", "records.tsv"));
  std::mutex out_mu;
  std::mt19937 seed_rng(7);
  std::vector<std::vector<int32_t>> prefixes(16);
  for (auto& p : prefixes) {
    p.push_back(1);
    for (int i = 0; i < 63; ++i) p.push_back(260 + static_cast<int32_t>(seed_rng() % 250));
  }
  const int64_t stop_at = NowMs() + seconds * 1000LL;
  std::vector<std::thread> threads;
  for (int t = 0; t < streams; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(1000 + t);
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
      args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
      auto channel = grpc::CreateCustomChannel(worker.empty() ? router : worker,
                                               grpc::InsecureChannelCredentials(), args);
      auto router_stub = kvmesh::v1::Inference::NewStub(channel);
      auto worker_stub = kvmesh::v1::Worker::NewStub(channel);
      while (NowMs() < stop_at) {
        const std::vector<int32_t> prompt = Prompt(prefixes, rng);
        Record r = !http.empty()    ? OverHttp(http, prompt, max_tokens)
                   : worker.empty() ? ThroughRouter(*router_stub, prompt, max_tokens)
                                    : StraightToWorker(*worker_stub, prompt, max_tokens, worker);
        std::replace(r.message.begin(), r.message.end(), '\t', ' ');
        std::replace(r.message.begin(), r.message.end(), '\n', ' ');
        {
          std::lock_guard<std::mutex> lock(out_mu);
          out << r.start << '\t' << r.first_token << '\t' << r.end << '\t' << r.tokens << '\t'
              << r.code << '\t' << (r.worker.empty() ? "-" : r.worker) << '\t'
              << (r.message.empty() ? "-" : r.message) << '\n';
        }
        // A client backs off a little after an error (the router may be down).
        if (r.code != 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    });
  }
  for (auto& th : threads) th.join();
  return 0;
}

int Inject(const std::map<std::string, std::string>& flags) {
  auto stub = kvmesh::v1::WorkerAdmin::NewStub(grpc::CreateChannel(
      Flag(flags, "--worker", "127.0.0.1:50051"), grpc::InsecureChannelCredentials()));
  kvmesh::v1::InjectFaultRequest req;
  if (flags.count("--step-delay-ms")) {
    req.set_step_delay_ms(static_cast<uint32_t>(std::atoi(flags.at("--step-delay-ms").c_str())));
  }
  req.set_drop_kv_event_batches(
      static_cast<uint32_t>(std::atoi(Flag(flags, "--drop-kv-event-batches", "0").c_str())));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  kvmesh::v1::InjectFaultResponse resp;
  const grpc::Status s = stub->InjectFault(&ctx, req, &resp);
  if (!s.ok()) {
    std::fprintf(stderr, "inject: %s\n", s.error_message().c_str());
    return 1;
  }
  std::printf("step_delay_ms=%u kv_event_batches_to_drop=%u\n", resp.step_delay_ms(),
              resp.kv_event_batches_to_drop());
  return 0;
}

double Percentile(std::vector<int64_t> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return static_cast<double>(v[std::min(v.size() - 1, static_cast<size_t>(p * v.size()))]);
}

int Report(const std::map<std::string, std::string>& flags) {
  std::vector<Record> records;
  std::ifstream in(Flag(flags, "--records", "records.tsv"));
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    Record r;
    std::string field;
    std::getline(f, field, '\t');
    r.start = std::stoll(field);
    std::getline(f, field, '\t');
    r.first_token = std::stoll(field);
    std::getline(f, field, '\t');
    r.end = std::stoll(field);
    std::getline(f, field, '\t');
    r.tokens = std::stoi(field);
    std::getline(f, field, '\t');
    r.code = std::stoi(field);
    std::getline(f, r.worker, '\t');
    std::getline(f, r.message);
    records.push_back(std::move(r));
  }
  std::vector<std::pair<int64_t, std::string>> marks;
  std::ifstream m(Flag(flags, "--marks", "marks.tsv"));
  for (std::string line; std::getline(m, line);) {
    const size_t space = line.find(' ');
    marks.emplace_back(std::stoll(line.substr(0, space)), line.substr(space + 1));
  }
  if (marks.empty()) {
    int64_t first = INT64_MAX;
    for (const Record& r : records) first = std::min(first, r.start);
    marks.emplace_back(records.empty() ? 0 : first, Flag(flags, "--label", "the whole run"));
  }
  std::printf(
      "| phase (from the fault on) | requests | lost before a token | cut after a token | TTFT "
      "p50 / p99 / max (ms) | errors stop after | answers per worker | what clients saw "
      "|\n|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < marks.size(); ++i) {
    const int64_t from = marks[i].first;
    const int64_t to = i + 1 < marks.size() ? marks[i + 1].first : INT64_MAX;
    int n = 0, lost = 0, cut = 0;
    int64_t last_error_end = from;
    std::vector<int64_t> ttft;
    std::map<std::string, int> seen, served;
    for (const Record& r : records) {
      if (r.end < from || r.end >= to) continue;
      ++n;
      if (r.code == 0) ++served[r.worker];
      if (r.first_token >= 0) ttft.push_back(r.first_token - r.start);
      if (r.code == 0) continue;
      (r.first_token < 0 ? lost : cut) += 1;
      last_error_end = std::max(last_error_end, r.end);
      std::string what = r.message.substr(0, 70);
      ++seen[what];
    }
    std::string saw;
    for (const auto& [what, count] : seen) {
      saw += (saw.empty() ? "" : "; ") + std::to_string(count) + "× " + what;
    }
    if (saw.empty()) saw = "nothing but tokens";
    int answered = 0;
    for (const auto& [worker, count] : served) answered += count;
    std::string shares;
    for (const auto& [worker, count] : served) {
      shares += (shares.empty() ? "" : " ") + worker + " " +
                std::to_string(100 * count / std::max(1, answered)) + "%";
    }
    const std::string stop =
        lost + cut == 0 ? "-"
                        : std::to_string((last_error_end - from) / 1000.0).substr(0, 4) + " s";
    std::printf(
        "| %s | %d | %d | %d | %.0f / %.0f / %.0f | %s | %s | %s |\n", marks[i].second.c_str(), n,
        lost, cut, Percentile(ttft, 0.5), Percentile(ttft, 0.99),
        ttft.empty() ? 0.0 : static_cast<double>(*std::max_element(ttft.begin(), ttft.end())),
        stop.c_str(), shares.c_str(), saw.c_str());
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const auto flags = Flags(argc, argv);
  if (mode == "load") return Load(flags);
  if (mode == "inject") return Inject(flags);
  if (mode == "report") return Report(flags);
  std::fprintf(stderr,
               "usage: fault_drill load|inject|report [flags] (see bench/fault_drill.cc)\n");
  return 2;
}
