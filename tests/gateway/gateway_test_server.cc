// gateway_test_server: the HTTP gateway over FakeInferenceCore on a loopback
// port, for tests/gateway/sdk_probe.mjs. Prints "PORT <n>" once it accepts
// connections and serves until its stdin closes (the parent going away).
// API key: "test-key".
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "router/gateway/http_gateway.h"
#include "tests/gateway/fake_inference_core.h"

int main() {
  kvmesh::router::testing::FakeInferenceCore core;
  kvmesh::router::gateway::GatewayOptions options;
  options.api_keys = {"test-key"};
  options.keepalive_interval = std::chrono::milliseconds(200);
  kvmesh::router::gateway::HttpGateway gateway(core, options);
  kvmesh::Status started = gateway.Start();
  if (!started.ok()) {
    std::fprintf(stderr, "gateway_test_server: %s\n", started.ToString().c_str());
    return 1;
  }
  std::printf("PORT %d\n", gateway.port());
  std::fflush(stdout);
  char byte;
  while (read(STDIN_FILENO, &byte, 1) > 0) {
  }
  gateway.Stop();
  return 0;
}
