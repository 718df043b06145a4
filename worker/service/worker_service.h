// The gRPC face of a worker: the Worker service (Info, Generate, Load,
// SubscribeKvEvents) and the WorkerAdmin service, both over one Engine.
//
// gRPC runs each call on its own thread; calls only queue work for the
// engine and wait on their own queues, so a slow or stuck client never
// blocks the engine loop. A Generate call whose client cancels, disconnects
// or passes its deadline cancels its request, which frees its blocks at the
// engine's next step.
#pragma once

#include <atomic>
#include <string>
#include <vector>

#include "common/grpc_security.h"
#include "common/tokenizer/tokenizer.h"
#include "kvmesh/v1/worker.grpc.pb.h"
#include "worker/engine/engine.h"
#include "worker/engine/grammar_constraint.h"
#include "worker/model/model.h"
#include "worker/runtime/graph_backend.h"
#include "worker/runtime/parallel_plan.h"
#include "worker/service/peer_pages.h"
#include "worker/service/worker_metrics.h"

namespace kvmesh {

// Who may call this worker and how it calls its peers.
struct WorkerAccess {
  std::string service_token;  // required from every caller of the Worker service; empty: none
  std::shared_ptr<const ChannelSecurity> peers = std::make_shared<const ChannelSecurity>();
};

struct WorkerIdentity {
  std::string worker_id;
  std::string kv_type;
  std::string role = "both";
  ParallelPlan plan;                    // reported by Info
  std::vector<DeviceCounters> devices;  // per plan device: bytes held
};

class WorkerServiceImpl final : public v1::Worker::Service {
 public:
  WorkerServiceImpl(const Model& model, const Tokenizer& tokenizer, Engine& engine,
                    WorkerMetrics& metrics, WorkerIdentity identity, WorkerAccess access);

  grpc::Status Info(grpc::ServerContext* ctx, const v1::InfoRequest* req,
                    v1::InfoResponse* resp) override;
  grpc::Status Generate(grpc::ServerContext* ctx, const v1::GenerateRequest* req,
                        grpc::ServerWriter<v1::GenerateResponse>* writer) override;
  grpc::Status Load(grpc::ServerContext* ctx, const v1::LoadRequest* req,
                    v1::LoadResponse* resp) override;
  grpc::Status SubscribeKvEvents(grpc::ServerContext* ctx, const v1::SubscribeKvEventsRequest* req,
                                 grpc::ServerWriter<v1::KvEventBatch>* writer) override;
  grpc::Status FetchKvPages(grpc::ServerContext* ctx, const v1::FetchKvPagesRequest* req,
                            grpc::ServerWriter<v1::KvPageBatch>* writer) override;

  // Ends open event streams (shutdown).
  void Shutdown() { shutting_down_ = true; }

 private:
  grpc::Status Authorize(const grpc::ServerContext& ctx) const;
  void FillLoad(v1::LoadResponse* resp) const;

  const Model& model_;
  const Tokenizer& tokenizer_;
  Engine& engine_;
  GrammarConstraints constraints_;  // compiled grammars, shared by requests
  WorkerMetrics& metrics_;
  WorkerIdentity identity_;
  v1::InfoResponse info_;  // built once
  std::string service_token_;
  GrpcKvPageTransport transport_;
  PeerFetcher fetcher_;
  std::atomic<uint64_t> next_request_id_{1};
  std::atomic<bool> shutting_down_{false};
};

class WorkerAdminImpl final : public v1::WorkerAdmin::Service {
 public:
  // `token` empty: no authentication (loopback deployments).
  WorkerAdminImpl(Engine& engine, std::string token) : engine_(engine), token_(std::move(token)) {}

  grpc::Status GetRuntimeConfig(grpc::ServerContext* ctx, const v1::GetRuntimeConfigRequest* req,
                                v1::RuntimeConfig* resp) override;
  grpc::Status UpdateRuntimeConfig(grpc::ServerContext* ctx,
                                   const v1::UpdateRuntimeConfigRequest* req,
                                   v1::RuntimeConfig* resp) override;
  grpc::Status ClearCache(grpc::ServerContext* ctx, const v1::ClearCacheRequest* req,
                          v1::ClearCacheResponse* resp) override;
  grpc::Status InjectFault(grpc::ServerContext* ctx, const v1::InjectFaultRequest* req,
                           v1::InjectFaultResponse* resp) override;

 private:
  grpc::Status Authorize(grpc::ServerContext* ctx) const;
  void Fill(v1::RuntimeConfig* out) const;

  Engine& engine_;
  std::string token_;
};

// Maps a kvmesh Status to a gRPC status with the same code and message.
grpc::Status ToGrpc(const Status& status);

}  // namespace kvmesh
