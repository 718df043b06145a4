// A worker process for end-to-end tests: started with a test's flags on
// free ports, with stubs for its gRPC services, and helpers to generate and
// read its metrics. KVMESH_WORKER_BINARY is the test target's worker binary.
#pragma once

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>
#include <httplib.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "kvmesh/v1/worker.grpc.pb.h"
#include "tests/support/subprocess.h"

namespace kvmesh::testing {

struct Worker {
  std::unique_ptr<Subprocess> process = std::make_unique<Subprocess>();
  std::string grpc;
  std::string http;
  std::unique_ptr<v1::Worker::Stub> stub;
  std::unique_ptr<v1::WorkerAdmin::Stub> admin;
};

inline Worker StartWorker(std::vector<std::string> extra = {}) {
  Worker w;
  std::vector<std::string> argv = {
      KVMESH_WORKER_BINARY, "--grpc-port", "0",           "--http-port", "0", "--threads", "2",
      "--kv-memory",        "32MiB",       "--log-level", "warning"};
  argv.insert(argv.end(), extra.begin(), extra.end());
  EXPECT_TRUE(w.process->Start(argv));
  const std::string line = w.process->WaitForLine("listening", std::chrono::seconds(30));
  EXPECT_FALSE(line.empty()) << "worker did not start";
  auto f = Subprocess::ParseFields(line);
  w.grpc = f["grpc"];
  w.http = f["http"];
  auto channel = grpc::CreateChannel(w.grpc, grpc::InsecureChannelCredentials());
  w.stub = v1::Worker::NewStub(channel);
  w.admin = v1::WorkerAdmin::NewStub(channel);
  return w;
}

struct Generation {
  grpc::Status status;
  std::vector<int32_t> tokens;
  std::string text;
  v1::GenerateResponse last;
};

inline Generation Generate(v1::Worker::Stub& stub, const v1::GenerateRequest& req,
                           grpc::ClientContext* ctx_in = nullptr, int cancel_after = -1) {
  grpc::ClientContext local;
  grpc::ClientContext* ctx = ctx_in ? ctx_in : &local;
  Generation g;
  auto reader = stub.Generate(ctx, req);
  v1::GenerateResponse resp;
  int n = 0;
  while (reader->Read(&resp)) {
    g.tokens.insert(g.tokens.end(), resp.tokens().begin(), resp.tokens().end());
    g.text += resp.text();
    g.last = resp;
    if (++n == cancel_after) ctx->TryCancel();
  }
  g.status = reader->Finish();
  return g;
}

inline v1::GenerateRequest Greedy(const std::vector<int32_t>& prompt, int max_tokens) {
  v1::GenerateRequest req;
  req.mutable_prompt_tokens()->Assign(prompt.begin(), prompt.end());
  req.mutable_sampling()->set_temperature(0);
  req.set_max_tokens(max_tokens);
  return req;
}

inline std::string Metrics(const std::string& http) {
  httplib::Client c("http://" + http);
  auto res = c.Get("/metrics");
  return res ? res->body : "";
}

inline double MetricValue(const std::string& text, const std::string& series) {
  const size_t at = text.find("\n" + series + " ");
  if (at == std::string::npos) return -1;
  return std::atof(text.c_str() + at + series.size() + 2);
}

}  // namespace kvmesh::testing
