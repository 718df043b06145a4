// kvmesh-worker: serves one GGUF model over gRPC to kvmesh routers.
#include <semaphore.h>

#include <csignal>
#include <cstdio>

#include "common/config_schema.h"
#include "common/log.h"
#include "worker/service/worker_server.h"

namespace {
sem_t g_signal;
void OnSignal(int) { sem_post(&g_signal); }  // async-signal-safe
}  // namespace

int main(int argc, char** argv) {
  kvmesh::WorkerOptions options;
  kvmesh::ConfigSchema schema("kvmesh-worker", "KVMESH_WORKER_");
  options.Register(&schema);
  if (kvmesh::Status s = schema.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "kvmesh-worker: %s\n", s.message().c_str());
    return 2;
  }
  if (schema.help()) {
    std::printf("%s", schema.Usage().c_str());
    return 0;
  }
  if (kvmesh::Status s = options.Validate(); !s.ok()) {
    std::fprintf(stderr, "kvmesh-worker: %s\n", s.message().c_str());
    return 2;
  }
  if (schema.print_config()) {
    std::printf("%s", schema.Dump().c_str());
    return 0;
  }
  sem_init(&g_signal, 0, 0);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  auto server = kvmesh::WorkerServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kvmesh-worker: %s\n", server.status().message().c_str());
    return 1;
  }
  // One line tests and scripts can parse.
  std::printf("kvmesh-worker listening grpc=%s:%d http=%s:%d id=%s\n", options.host.c_str(),
              (*server)->grpc_port(), options.host.c_str(), (*server)->http_port(),
              (*server)->worker_id().c_str());
  std::fflush(stdout);
  while (sem_wait(&g_signal) != 0) {
  }
  kvmesh::Log(kvmesh::LogLevel::kInfo, "worker", "signal received: draining");
  (*server)->Shutdown(
      std::chrono::milliseconds(static_cast<int64_t>(options.shutdown_grace_seconds * 1000)));
  kvmesh::Log(kvmesh::LogLevel::kInfo, "worker", "stopped");
  return 0;
}
