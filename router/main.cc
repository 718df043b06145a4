// kvmesh-router: routes requests to the kvmesh-worker that can serve them
// fastest, above all the one already holding the request's prefix.
#include <cstdio>

#include "common/log.h"
#include "common/server_main.h"
#include "router/router_server.h"

int main(int argc, char** argv) {
  kvmesh::router::RouterOptions options;
  kvmesh::ConfigSchema schema("kvmesh-router", "KVMESH_ROUTER_");
  options.Register(&schema);
  if (auto exit_code =
          kvmesh::ParseServerConfig(schema, argc, argv, [&] { return options.Validate(); })) {
    return *exit_code;
  }
  kvmesh::InstallTerminationHandlers();
  auto server = kvmesh::router::RouterServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kvmesh-router: %s\n", server.status().message().c_str());
    return 1;
  }
  std::printf("kvmesh-router listening grpc=%s:%d http=%s:%d policy=%s tls=%s\n",
              options.host.c_str(), (*server)->grpc_port(), options.host.c_str(),
              (*server)->http_port(), options.policy.c_str(),
              options.tls_cert.empty() ? "off" : (options.tls_client_ca.empty() ? "on" : "mutual"));
  std::fflush(stdout);
  kvmesh::WaitForTerminationSignal();
  kvmesh::Log(kvmesh::LogLevel::kInfo, "router", "signal received: draining");
  (*server)->Drain(
      std::chrono::milliseconds(static_cast<int64_t>(options.shutdown_grace_seconds * 1000)));
  (*server)->Shutdown();
  kvmesh::Log(kvmesh::LogLevel::kInfo, "router", "stopped");
  return 0;
}
