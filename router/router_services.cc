#include "router/router_services.h"

#include <algorithm>
#include <cstdio>

#include "common/grpc_security.h"
#include "common/secret_compare.h"

namespace kvmesh::router {
namespace {

// Authorize's answer (UNAUTHENTICATED, or RESOURCE_EXHAUSTED past a rate
// limit) as a Status, its code kept.
Status FromGrpcStatus(const grpc::Status& s) {
  return Status(static_cast<StatusCode>(static_cast<int>(s.error_code())), s.error_message());
}

grpc::Status ToGrpc(const Status& s) {
  if (s.ok()) return grpc::Status::OK;
  return grpc::Status(static_cast<grpc::StatusCode>(static_cast<int>(s.code())), s.message());
}

}  // namespace

grpc::Status InferenceServiceImpl::Authorize(grpc::ServerContext* ctx) const {
  if (api_keys_.empty()) return grpc::Status::OK;
  const auto& md = ctx->client_metadata();
  auto it = md.find("authorization");
  if (it != md.end()) {
    const std::string_view value(it->second.data(), it->second.size());
    constexpr std::string_view kScheme = "Bearer ";
    if (value.substr(0, kScheme.size()) == kScheme) {
      const std::string_view token = value.substr(kScheme.size());
      // Every key is compared in full: no early exit on a match.
      bool accepted = false;
      size_t which = 0;
      for (size_t i = 0; i < api_keys_.size(); ++i) {
        const bool match = SecretsEqual(token, api_keys_[i]);
        accepted |= match;
        if (match) which = i;
      }
      if (accepted && limiter_) {
        if (const double wait = limiter_->Acquire(which); wait > 0) {
          char retry[32];
          std::snprintf(retry, sizeof retry, "%.1f", wait);
          return grpc::Status(
              grpc::StatusCode::RESOURCE_EXHAUSTED,
              "rate limit reached (" + limiter_->Describe() + "); retry in " + retry + " s");
        }
      }
      if (accepted) return grpc::Status::OK;
    }
  }
  return grpc::Status(grpc::StatusCode::UNAUTHENTICATED,
                      "missing or wrong API key (send metadata \"authorization: Bearer KEY\")");
}

grpc::Status InferenceServiceImpl::Finish(const std::string& route, const Status& status) {
  if (metrics_) metrics_->OnRequest(route, std::string(StatusCodeName(status.code())));
  return ToGrpc(status);
}

grpc::Status InferenceServiceImpl::Generate(grpc::ServerContext* ctx,
                                            const v1::GenerateTextRequest* req,
                                            grpc::ServerWriter<v1::GenerateTextResponse>* writer) {
  if (auto a = Authorize(ctx); !a.ok()) return Finish("grpc.Generate", FromGrpcStatus(a));
  Status s = core_.Generate(*req, [&](const v1::GenerateTextResponse& m) {
    if (IsProgress(m)) return !ctx->IsCancelled();
    return !ctx->IsCancelled() && writer->Write(m);
  });
  return Finish("grpc.Generate", s);
}

grpc::Status InferenceServiceImpl::Chat(grpc::ServerContext* ctx, const v1::ChatRequest* req,
                                        grpc::ServerWriter<v1::GenerateTextResponse>* writer) {
  if (auto a = Authorize(ctx); !a.ok()) return Finish("grpc.Chat", FromGrpcStatus(a));
  Status s = core_.Chat(*req, [&](const v1::GenerateTextResponse& m) {
    if (IsProgress(m)) return !ctx->IsCancelled();
    return !ctx->IsCancelled() && writer->Write(m);
  });
  return Finish("grpc.Chat", s);
}

grpc::Status InferenceServiceImpl::ListModels(grpc::ServerContext* ctx,
                                              const v1::ListModelsRequest*,
                                              v1::ListModelsResponse* resp) {
  if (auto a = Authorize(ctx); !a.ok()) return a;
  auto r = core_.ListModels();
  if (!r.ok()) return Finish("grpc.ListModels", r.status());
  *resp = std::move(r).value();
  return Finish("grpc.ListModels", Status::Ok());
}

grpc::Status InferenceServiceImpl::Tokenize(grpc::ServerContext* ctx,
                                            const v1::TokenizeRequest* req,
                                            v1::TokenizeResponse* resp) {
  if (auto a = Authorize(ctx); !a.ok()) return a;
  auto r = core_.Tokenize(*req);
  if (!r.ok()) return Finish("grpc.Tokenize", r.status());
  *resp = std::move(r).value();
  return Finish("grpc.Tokenize", Status::Ok());
}

grpc::Status RegistryServiceImpl::Register(grpc::ServerContext* ctx,
                                           const v1::RegisterWorkerRequest* req,
                                           v1::RegisterWorkerResponse* resp) {
  if (grpc::Status s = CheckBearerToken(*ctx, worker_token_, "RouterRegistry", "worker_token");
      !s.ok()) {
    return s;
  }
  if (req->address().empty() || req->address().find(':') == std::string::npos) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "address \"" + req->address() + "\" must be HOST:PORT");
  }
  const uint32_t ttl =
      std::clamp<uint32_t>(req->ttl_seconds() == 0 ? 15 : req->ttl_seconds(), 2, 3600);
  registry_.Heartbeat(req->address(), std::chrono::seconds(ttl));
  resp->set_router_id(router_id_);
  return grpc::Status::OK;
}

grpc::Status RegistryServiceImpl::Deregister(grpc::ServerContext* ctx,
                                             const v1::DeregisterWorkerRequest* req,
                                             v1::DeregisterWorkerResponse*) {
  if (grpc::Status s = CheckBearerToken(*ctx, worker_token_, "RouterRegistry", "worker_token");
      !s.ok()) {
    return s;
  }
  registry_.Deregister(req->address());
  return grpc::Status::OK;
}

}  // namespace kvmesh::router
