#include "router/router_server.h"

#include <grpcpp/health_check_service_interface.h>

#include <thread>

#include "common/log.h"
#include "router/status_page.h"

namespace kvmesh::router {
StatusOr<std::unique_ptr<RouterServer>> RouterServer::Start(const RouterOptions& o) {
  RETURN_IF_ERROR(o.Validate());
  LogLevel level;
  ParseLogLevel(o.log_level, &level);
  SetLogLevel(level);
  std::unique_ptr<RouterServer> r(new RouterServer());
  r->options_ = o;

  RegistryOptions ro;
  ASSIGN_OR_RETURN(ro.connection.security, ChannelSecurity::Make(o.WorkerTls(), o.worker_token));
  ro.connection.poll_interval =
      std::chrono::milliseconds(static_cast<int64_t>(o.poll_interval_seconds * 1000));
  ro.dns_refresh = std::chrono::milliseconds(static_cast<int64_t>(o.dns_refresh_seconds * 1000));
  ro.chat_template_override = o.chat_template;
  for (const std::string& a : o.model_aliases) ro.model_aliases.push_back(*ParseModelAlias(a));
  ro.strict_model_names = o.strict_model_names;
  ro.optimistic_ttl =
      std::chrono::milliseconds(static_cast<int64_t>(o.optimistic_ttl_seconds * 1000));
  r->registry_ = std::make_unique<Registry>(ro);
  r->metrics_ = std::make_unique<RouterMetrics>(r->registry_.get());
  ASSIGN_OR_RETURN(std::unique_ptr<Policy> policy,
                   MakePolicy(o.policy, o.weights(), o.approx_prefix()));
  RouterCoreOptions co;
  co.max_attempts = static_cast<int>(o.max_attempts);
  co.default_max_tokens = static_cast<int32_t>(o.default_max_tokens);
  co.session_guard_ratio = o.weights().guard_ratio;
  co.session_guard_slack = o.weights().guard_slack;
  co.disagg_min_prompt_tokens = static_cast<int32_t>(o.disagg_min_prompt_tokens);
  co.decision_sample = static_cast<int>(o.decision_sample);
  co.log_request_text = o.log_request_text;
  co.request_timeout =
      std::chrono::milliseconds(static_cast<int64_t>(o.request_timeout_seconds * 1000));
  r->core_ =
      std::make_unique<RouterCore>(r->registry_.get(), std::move(policy), r->metrics_.get(), co);

  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> creds,
                   MakeServerCredentials({o.tls_cert, o.tls_key, o.tls_client_ca}));
  builder.AddListeningPort(o.host + ":" + std::to_string(o.grpc_port), creds, &r->grpc_port_);
  // gRPC sets SO_REUSEPORT by default, which lets a second process bind the
  // same port and silently take part of its traffic: a port in use must be
  // an error at start instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const std::string router_id =
      o.router_id.empty() ? o.host + ":" + std::to_string(o.grpc_port) : o.router_id;
  std::shared_ptr<KeyRateLimiter> limiter;
  if (o.api_key_rate > 0 && !o.api_keys.empty()) {
    limiter = std::make_shared<KeyRateLimiter>(o.api_keys.size(), o.api_key_rate, o.api_key_burst);
  }
  r->inference_ =
      std::make_unique<InferenceServiceImpl>(*r->core_, r->metrics_.get(), o.api_keys, limiter);
  r->registry_service_ =
      std::make_unique<RegistryServiceImpl>(*r->registry_, router_id, o.worker_token);
  builder.RegisterService(r->inference_.get());
  builder.RegisterService(r->registry_service_.get());
  r->grpc_server_ = builder.BuildAndStart();
  if (!r->grpc_server_ || r->grpc_port_ == 0) {
    return UnavailableError("cannot listen for gRPC on " + o.host + ":" +
                            std::to_string(o.grpc_port));
  }

  gateway::GatewayOptions go;
  go.host = o.host;
  go.port = static_cast<int>(o.http_port);
  go.api_keys = o.api_keys;
  go.rate_limiter = limiter;  // one bucket per key across both front doors
  go.volatile_prefixes = o.volatile_prefixes;
  go.num_threads = static_cast<int>(o.http_threads);
  go.tls_cert_file = o.tls_cert;
  go.tls_key_file = o.tls_key;
  go.tls_client_ca_file = o.tls_client_ca;
  RouterMetrics* metrics = r->metrics_.get();
  Registry* registry = r->registry_.get();
  go.metrics_text = [metrics] { return metrics->Render(); };
  go.status_html = std::string(StatusHtml());
  go.status_json = [server = r.get(),
                    id = o.router_id.empty() ? o.host + ":" + std::to_string(o.grpc_port)
                                             : o.router_id,
                    policy = o.policy] {
    return StatusJson({server->registry_.get(), &server->core_->routing_log(), id, policy,
                       server->draining_.load()});
  };
  go.health = [registry, draining = &r->draining_]() -> Status {
    if (draining->load()) return UnavailableError("draining: the router is shutting down");
    if (registry->AnyHealthy()) return Status::Ok();
    return UnavailableError("no healthy worker yet");
  };
  go.on_response = [metrics](std::string_view route, int http_status) {
    metrics->OnRequest(std::string(route), std::to_string(http_status));
  };
  r->gateway_ = std::make_unique<gateway::HttpGateway>(*r->core_, go);
  RETURN_IF_ERROR(r->gateway_->Start());

  r->registry_->SetStaticWorkers(o.workers);
  if (!o.workers_dns.empty()) RETURN_IF_ERROR(r->registry_->StartDns(o.workers_dns));
  Log(LogLevel::kInfo, "router",
      "routing with policy " + o.policy + " to " + std::to_string(o.workers.size()) +
          " static workers" + (o.workers_dns.empty() ? "" : " and DNS " + o.workers_dns));
  return r;
}

void RouterServer::Drain(std::chrono::milliseconds grace) {
  draining_ = true;
  if (grpc_server_) {
    if (auto* health = grpc_server_->GetHealthCheckService()) health->SetServingStatus(false);
  }
  const auto give_up = std::chrono::steady_clock::now() + grace;
  while (core_ && core_->active_requests() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  const int left = core_ ? core_->active_requests() : 0;
  Log(left == 0 ? LogLevel::kInfo : LogLevel::kWarning, "router",
      left == 0 ? "drained: no request in flight"
                : "grace period over with " + std::to_string(left) + " requests in flight");
}

void RouterServer::Shutdown() {
  if (shut_down_) return;
  shut_down_ = true;
  // Start() may have failed half way: every piece is optional here.
  if (gateway_) gateway_->Stop();
  if (grpc_server_)
    grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  if (registry_) registry_->Stop();
}

RouterServer::~RouterServer() { Shutdown(); }

}  // namespace kvmesh::router
