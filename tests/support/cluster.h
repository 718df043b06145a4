// Helpers for end-to-end tests: start kvmesh-worker and kvmesh-router as real
// processes on loopback and wait until they are ready.
#pragma once

#include <grpcpp/grpcpp.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kvmesh/v1/inference.grpc.pb.h"
#include "tests/support/subprocess.h"

namespace kvmesh::testing {

struct ProcessHandle {
  std::unique_ptr<Subprocess> process;
  std::string grpc;  // host:port
  std::string http;  // host:port
  std::string id;
  int grpc_port = 0;

  bool ok() const { return process != nullptr && !grpc.empty(); }
};

// `binary` is KVMESH_WORKER_BINARY; grpc_port 0 picks a free port.
ProcessHandle StartWorker(const std::string& binary, const std::vector<std::string>& extra = {},
                          int grpc_port = 0, const std::string& log_name = "");
ProcessHandle StartRouter(const std::string& binary, const std::vector<std::string>& workers,
                          const std::vector<std::string>& extra = {},
                          const std::string& log_name = "");

// Polls the router's ListModels until `model` (or the only model) has
// `workers` healthy workers; `credentials` null: plaintext.
bool WaitForHealthyWorkers(const std::string& router_grpc, int workers,
                           std::chrono::milliseconds timeout, const std::string& api_key = "",
                           std::shared_ptr<grpc::ChannelCredentials> credentials = nullptr);

// One greedy Generate through a router, as the client saw it.
struct Result {
  grpc::Status status;
  std::string text;
  std::vector<int32_t> tokens;
  v1::GenerateTextResponse last;
  std::string worker;
};
Result Generate(v1::Inference::Stub& stub, const std::vector<int32_t>& prompt, int max_tokens,
                const std::string& salt = "");

// `n` ordinary text tokens of stories260K's vocabulary.
std::vector<int32_t> RandomTokens(std::mt19937& rng, int n);

// The body of GET http://HOST_PORT/PATH ("" when it fails).
std::string HttpGet(const std::string& host_port, const std::string& path);
// The value of one series in Prometheus text (-1 when absent).
double Metric(const std::string& text, const std::string& series);

}  // namespace kvmesh::testing
