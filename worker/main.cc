// kvmesh-worker: serves one GGUF model over gRPC to kvmesh routers.
#include <cstdio>

#include "common/log.h"
#include "common/server_main.h"
#include "worker/service/worker_server.h"

int main(int argc, char** argv) {
  kvmesh::WorkerOptions options;
  kvmesh::ConfigSchema schema("kvmesh-worker", "KVMESH_WORKER_");
  options.Register(&schema);
  if (auto exit_code =
          kvmesh::ParseServerConfig(schema, argc, argv, [&] { return options.Validate(); })) {
    return *exit_code;
  }
  kvmesh::InstallTerminationHandlers();
  auto server = kvmesh::WorkerServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kvmesh-worker: %s\n", server.status().message().c_str());
    return 1;
  }
  // One line tests and scripts can parse.
  std::printf("kvmesh-worker listening grpc=%s http=%s:%d id=%s tls=%s\n",
              (*server)->grpc_address().c_str(), options.host.c_str(), (*server)->http_port(),
              (*server)->worker_id().c_str(),
              !(*server)->tls() ? "off" : (options.tls_client_auth ? "mutual" : "on"));
  std::fflush(stdout);
  kvmesh::WaitForTerminationSignal();
  kvmesh::Log(kvmesh::LogLevel::kInfo, "worker", "signal received: draining");
  (*server)->Shutdown(
      std::chrono::milliseconds(static_cast<int64_t>(options.shutdown_grace_seconds * 1000)));
  kvmesh::Log(kvmesh::LogLevel::kInfo, "worker", "stopped");
  return 0;
}
