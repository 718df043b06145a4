// kvmesh-router: routes requests to the kvmesh-worker that can serve them
// fastest, above all the one already holding the request's prefix.
#include <semaphore.h>

#include <csignal>
#include <cstdio>

#include "common/config_schema.h"
#include "common/log.h"
#include "router/router_server.h"

namespace {
sem_t g_signal;
void OnSignal(int) { sem_post(&g_signal); }
}  // namespace

int main(int argc, char** argv) {
  kvmesh::router::RouterOptions options;
  kvmesh::ConfigSchema schema("kvmesh-router", "KVMESH_ROUTER_");
  options.Register(&schema);
  if (kvmesh::Status s = schema.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "kvmesh-router: %s\n", s.message().c_str());
    return 2;
  }
  if (schema.help()) {
    std::printf("%s", schema.Usage().c_str());
    return 0;
  }
  if (kvmesh::Status s = options.Validate(); !s.ok()) {
    std::fprintf(stderr, "kvmesh-router: %s\n", s.message().c_str());
    return 2;
  }
  if (schema.print_config()) {
    std::printf("%s", schema.Dump().c_str());
    return 0;
  }
  sem_init(&g_signal, 0, 0);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGINT, OnSignal);
  auto server = kvmesh::router::RouterServer::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "kvmesh-router: %s\n", server.status().message().c_str());
    return 1;
  }
  std::printf("kvmesh-router listening grpc=%s:%d http=%s:%d policy=%s\n", options.host.c_str(),
              (*server)->grpc_port(), options.host.c_str(), (*server)->http_port(),
              options.policy.c_str());
  std::fflush(stdout);
  while (sem_wait(&g_signal) != 0) {
  }
  kvmesh::Log(kvmesh::LogLevel::kInfo, "router", "signal received: stopping");
  (*server)->Shutdown();
  return 0;
}
