// WorkerServer: a whole kvmesh-worker in one object — loads the model, builds
// the executor and engine, and serves gRPC (Worker, WorkerAdmin, health) and
// HTTP (/metrics, /healthz). main() and in-process tests use it alike.
//
// Shutdown() is graceful: the worker stops taking requests (health turns
// NOT_SERVING, Generate answers UNAVAILABLE), lets running requests finish
// for up to the grace period, cancels the rest, then stops the servers.
#pragma once

#include <grpcpp/grpcpp.h>

#include <memory>
#include <string>
#include <thread>

#include "common/tokenizer/tokenizer.h"
#include "worker/engine/engine.h"
#include "worker/model/model.h"
#include "worker/service/worker_metrics.h"
#include "worker/service/worker_options.h"
#include "worker/service/worker_service.h"

namespace httplib {
class Server;
}

namespace kvmesh {

class WorkerServer {
 public:
  static StatusOr<std::unique_ptr<WorkerServer>> Start(const WorkerOptions& options);
  ~WorkerServer();

  int grpc_port() const { return grpc_port_; }
  // What clients dial: host:port, or unix:PATH with --listen.
  const std::string& grpc_address() const { return grpc_address_; }
  int http_port() const { return http_port_; }
  // Whether gRPC and HTTP are served over TLS.
  bool tls() const { return !options_.tls_cert.empty(); }
  const std::string& worker_id() const { return worker_id_; }
  Engine& engine() { return *engine_; }

  // Graceful; idempotent.
  void Shutdown(std::chrono::milliseconds grace);
  // Blocks until Shutdown() completed.
  void Wait();

 private:
  WorkerServer() = default;
  void RegistrationLoop();

  WorkerOptions options_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<WorkerMetrics> metrics_;
  std::unique_ptr<Engine> engine_;
  std::unique_ptr<WorkerServiceImpl> service_;
  std::unique_ptr<WorkerAdminImpl> admin_;
  std::unique_ptr<grpc::Server> grpc_server_;
  // How this worker dials peers and the router (TLS, service token).
  std::shared_ptr<const ChannelSecurity> outgoing_;
  std::unique_ptr<httplib::Server> http_;
  std::thread http_thread_;
  std::thread registration_thread_;  // heartbeats to options_.router, when set
  int grpc_port_ = 0;
  std::string grpc_address_;
  int http_port_ = 0;
  std::string worker_id_;
  std::mutex shutdown_mu_;
  std::condition_variable shutdown_cv_;
  bool shutdown_done_ = false;
  bool shutdown_started_ = false;
  std::atomic<bool> draining_{false};
};

}  // namespace kvmesh
