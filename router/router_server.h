// RouterServer: a whole kvmesh-router in one object — registry, routing
// core, gRPC (Inference, RouterRegistry, health) and the HTTP gateway
// (OpenAI/Anthropic APIs, /metrics, /healthz). main() and tests use it alike.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>

#include "router/gateway/http_gateway.h"
#include "router/registry.h"
#include "router/router_core.h"
#include "router/router_metrics.h"
#include "router/router_options.h"
#include "router/router_services.h"

namespace kvmesh::router {

class RouterServer {
 public:
  static StatusOr<std::unique_ptr<RouterServer>> Start(const RouterOptions& options);
  ~RouterServer();

  int grpc_port() const { return grpc_port_; }
  int http_port() const { return gateway_->port(); }
  Registry& registry() { return *registry_; }
  RouterCore& core() { return *core_; }

  // SIGTERM's first half: /healthz and the gRPC health service turn
  // unready (load balancers stop sending), requests still arriving are
  // served, and it waits until none is in flight or `grace` passes.
  void Drain(std::chrono::milliseconds grace);
  void Shutdown();

 private:
  RouterServer() = default;

  RouterOptions options_;
  std::unique_ptr<Registry> registry_;
  std::unique_ptr<RouterMetrics> metrics_;
  std::unique_ptr<RouterCore> core_;
  std::unique_ptr<InferenceServiceImpl> inference_;
  std::unique_ptr<RegistryServiceImpl> registry_service_;
  std::unique_ptr<grpc::Server> grpc_server_;
  std::unique_ptr<gateway::HttpGateway> gateway_;
  int grpc_port_ = 0;
  bool shut_down_ = false;
  std::atomic<bool> draining_{false};
};

}  // namespace kvmesh::router
