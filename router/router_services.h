// The router's gRPC services: Inference (the client API, over an
// InferenceCore) and RouterRegistry (worker self-registration).
#pragma once

#include <grpcpp/grpcpp.h>

#include "kvmesh/v1/inference.grpc.pb.h"
#include "kvmesh/v1/router.grpc.pb.h"
#include "router/inference_core.h"
#include "router/key_rate_limiter.h"
#include "router/registry.h"
#include "router/router_metrics.h"

namespace kvmesh::router {

class InferenceServiceImpl final : public v1::Inference::Service {
 public:
  // `api_keys` empty: no authentication; otherwise callers send
  // "authorization: Bearer KEY" metadata.
  // `limiter` (may be null) limits each key's request rate.
  InferenceServiceImpl(InferenceCore& core, RouterMetrics* metrics,
                       std::vector<std::string> api_keys,
                       std::shared_ptr<KeyRateLimiter> limiter = nullptr)
      : core_(core),
        metrics_(metrics),
        api_keys_(std::move(api_keys)),
        limiter_(std::move(limiter)) {}

  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateTextRequest* req,
                        grpc::ServerWriter<v1::GenerateTextResponse>* writer) override;
  grpc::Status Chat(grpc::ServerContext* ctx, const v1::ChatRequest* req,
                    grpc::ServerWriter<v1::GenerateTextResponse>* writer) override;
  grpc::Status ListModels(grpc::ServerContext* ctx, const v1::ListModelsRequest* req,
                          v1::ListModelsResponse* resp) override;
  grpc::Status Tokenize(grpc::ServerContext* ctx, const v1::TokenizeRequest* req,
                        v1::TokenizeResponse* resp) override;

 private:
  grpc::Status Authorize(grpc::ServerContext* ctx) const;
  grpc::Status Finish(const std::string& route, const Status& status);

  InferenceCore& core_;
  RouterMetrics* metrics_;
  std::vector<std::string> api_keys_;
  std::shared_ptr<KeyRateLimiter> limiter_;
};

class RegistryServiceImpl final : public v1::RouterRegistry::Service {
 public:
  // `worker_token` empty: any caller may register a worker (loopback
  // deployments); otherwise callers must send it as a bearer token.
  RegistryServiceImpl(Registry& registry, std::string router_id, std::string worker_token)
      : registry_(registry),
        router_id_(std::move(router_id)),
        worker_token_(std::move(worker_token)) {}

  grpc::Status Register(grpc::ServerContext* ctx, const v1::RegisterWorkerRequest* req,
                        v1::RegisterWorkerResponse* resp) override;
  grpc::Status Deregister(grpc::ServerContext* ctx, const v1::DeregisterWorkerRequest* req,
                          v1::DeregisterWorkerResponse* resp) override;

 private:
  Registry& registry_;
  std::string router_id_;
  std::string worker_token_;
};

}  // namespace kvmesh::router
