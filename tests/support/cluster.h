// Helpers for end-to-end tests: start kvmesh-worker and kvmesh-router as real
// processes on loopback and wait until they are ready.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

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
// `workers` healthy workers.
bool WaitForHealthyWorkers(const std::string& router_grpc, int workers,
                           std::chrono::milliseconds timeout, const std::string& api_key = "");

}  // namespace kvmesh::testing
