#include "worker/service/worker_server.h"

#include <grpcpp/health_check_service_interface.h>
#include <httplib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <thread>

#include "common/log.h"
#include "common/model_path.h"
#include "kvmesh/v1/router.grpc.pb.h"
#include "worker/kv/kv_memory_fit.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

// gRPC removes a socket file before binding it, so a second worker given
// the same path would silently take the first one's clients: a socket some
// process answers on is an error here instead (a stale file is fine).
Status CheckSocketFree(const std::string& path) {
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0)
    return UnavailableError("cannot create a Unix domain socket: " +
                            std::string(std::strerror(errno)));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  const bool answered = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(fd);
  if (answered) {
    return UnavailableError("option listen: unix:" + path +
                            " is in use: another process is serving on that socket");
  }
  return Status::Ok();
}

}  // namespace

StatusOr<std::unique_ptr<WorkerServer>> WorkerServer::Start(const WorkerOptions& o) {
  RETURN_IF_ERROR(o.Validate());
  LogLevel level;
  ParseLogLevel(o.log_level, &level);
  SetLogLevel(level);

  std::unique_ptr<WorkerServer> w(new WorkerServer());
  w->options_ = o;
  ASSIGN_OR_RETURN(std::string path, ResolveModelPath(o.model));
  ModelLoadOptions load;
  load.require_sha256 = o.require_sha256 || !o.model_sha256.empty();
  load.expected_sha256 = o.model_sha256;
  ASSIGN_OR_RETURN(w->model_, Model::Load(path, load));
  ASSIGN_OR_RETURN(TokenizerConfig tc, TokenizerConfigFromGguf(w->model_->file()));
  ASSIGN_OR_RETURN(w->tokenizer_, Tokenizer::Create(std::move(tc)));

  const ModelConfig& c = w->model_->config();
  ASSIGN_OR_RETURN(KvCacheOptions kv_options, o.KvOptions());
  ASSIGN_OR_RETURN(KvLayout layout, BuildKvLayout(kv_options, *w->model_));
  const int64_t context = o.context_length > 0
                              ? o.context_length
                              : std::min<int64_t>(c.n_ctx_train, kDefaultMaxContext);
  if (context > c.n_ctx_train && !o.allow_context_overflow) {
    return InvalidArgumentError(
        "option context_length = " + std::to_string(context) + " is past " + path +
        "'s training context of " + std::to_string(c.n_ctx_train) +
        " tokens (its RoPE scaling included); positions beyond it were never trained: set "
        "allow_context_overflow (--allow-context-overflow) to run there anyway");
  }
  ASSIGN_OR_RETURN(PlanOptions plan_options, o.Plan());
  ASSIGN_OR_RETURN(ParallelPlan plan, ParallelPlan::Make(c, w->model_->weights(), plan_options));
  auto fit = FitKvBlocksOnDevices(o.kv_memory, layout, plan, context);
  if (!fit.ok()) return fit.status().WithPrefix("option kv_memory");
  int64_t blocks = fit->num_blocks;
  if (o.kv_window_pages == "on") {
    if (c.MaxWindow() == 0) {
      Log(LogLevel::kWarning, "worker",
          "kv_window_pages is on, but " + path + " has no sliding-window layer: no effect");
    } else if (context <= c.MaxWindow()) {
      Log(LogLevel::kWarning, "worker",
          "kv_window_pages is on, but the context (" + std::to_string(context) +
              " tokens) is within the window (" + std::to_string(c.MaxWindow()) +
              "): no page would ever be released; window pages stay off");
    } else {
      // What the running requests can hold at once (each its window's pages,
      // a partly filled block and a step's new blocks), and as much again
      // for the window pages of finished requests' prefixes (none without
      // prefix caching).
      const int64_t bs = layout.block_size;
      const int64_t span = (c.MaxWindow() - 1 + bs - 1) / bs;
      const int64_t window_blocks =
          (o.prefix_caching ? 2 : 1) *
          (o.max_running_requests * (span + 2) + (o.max_tokens_per_step + bs - 1) / bs);
      const int64_t beside = BlocksBesideWindowPages(blocks, window_blocks, plan, c);
      if (beside <= blocks) {
        Log(LogLevel::kWarning, "worker",
            "kv_window_pages: " + std::to_string(window_blocks) + " window pages for " +
                std::to_string(o.max_running_requests) +
                " running requests take as much memory "
                "as they free (the cache holds " +
                std::to_string(blocks) + " blocks); window pages stay off");
      } else {
        Log(LogLevel::kInfo, "worker",
            "kv_window_pages: " + std::to_string(window_blocks) +
                " window pages for the sliding-window layers; the other layers' blocks go from " +
                std::to_string(blocks) + " to " + std::to_string(beside));
        layout.window_blocks = window_blocks;
        blocks = beside;
      }
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<ModelExecutor> exec,
                   ModelExecutor::Create(*w->model_, layout, plan, blocks));
  ModelExecutor* executor = exec.get();  // owned by the engine from here on

  EngineConfig ec;
  ec.limits = {static_cast<int32_t>(o.max_tokens_per_step),
               static_cast<int32_t>(o.max_running_requests),
               static_cast<int32_t>(o.max_waiting_requests)};
  ec.max_model_len = static_cast<int32_t>(context);
  ec.enable_prefix_caching = o.prefix_caching;
  ec.kv_eviction = ParseKvEviction(o.kv_eviction).value_or(KvEviction::kLru);  // validated
  ec.model_identity = w->model_->identity();
  ASSIGN_OR_RETURN(ec.kv_host_memory_bytes, o.KvHostMemoryBytes());

  // Listen first, so the worker id can name the real port.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::ServerBuilder builder;
  const bool on_socket = !o.listen.empty();
  if (on_socket) RETURN_IF_ERROR(CheckSocketFree(o.listen.substr(5)));
  ASSIGN_OR_RETURN(std::shared_ptr<grpc::ServerCredentials> credentials,
                   MakeServerCredentials(o.ServerTls()));
  ASSIGN_OR_RETURN(w->outgoing_, ChannelSecurity::Make(o.ClientTls(), o.service_token));
  builder.AddListeningPort(on_socket ? o.listen : o.host + ":" + std::to_string(o.grpc_port),
                           credentials, &w->grpc_port_);
  // gRPC sets SO_REUSEPORT by default, which lets a second worker bind the
  // same port and silently take part of its traffic: a port in use must be
  // an error at start instead.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder.SetMaxReceiveMessageSize(64 << 20);
  builder.SetMaxSendMessageSize(64 << 20);

  w->metrics_ = std::make_unique<WorkerMetrics>();
  w->engine_ = std::make_unique<Engine>(c, *w->tokenizer_, std::move(exec), ec, w->metrics_.get());
  w->metrics_->SetLoadSource([e = w->engine_.get()] { return e->GetLoad(); });
  w->metrics_->SetDeviceSource([executor] {
    std::vector<DeviceMetric> out;
    const std::vector<DeviceCounters> counters = executor->Counters();
    const ParallelPlan& p = executor->plan();
    for (size_t d = 0; d < counters.size(); ++d) {
      const DeviceShard& shard = p.devices[d];
      out.push_back({shard.device.Name(), std::string(SplitKindName(p.split)), shard.num_layers(),
                     shard.num_kv_heads(), shard.threads, counters[d].weight_bytes,
                     counters[d].kv_bytes, counters[d].comm_seconds});
    }
    return out;
  });
  // The worker id depends on the port, known only after BuildAndStart; the
  // services read it from identity, so build them with a placeholder and fix
  // the id right after (nothing is served before BuildAndStart returns).
  WorkerIdentity identity{o.worker_id, layout.TypeName(), o.role, plan, executor->Counters()};
  w->admin_ = std::make_unique<WorkerAdminImpl>(*w->engine_, o.admin_token);
  // Port 0 is resolved by BuildAndStart; the Info id must carry the real one.
  if (identity.worker_id.empty() && (on_socket || o.grpc_port != 0)) {
    identity.worker_id = on_socket ? o.listen : o.host + ":" + std::to_string(o.grpc_port);
  }
  w->service_ =
      std::make_unique<WorkerServiceImpl>(*w->model_, *w->tokenizer_, *w->engine_, *w->metrics_,
                                          identity, WorkerAccess{o.service_token, w->outgoing_});
  builder.RegisterService(w->service_.get());
  builder.RegisterService(w->admin_.get());
  w->engine_->Start();
  w->grpc_server_ = builder.BuildAndStart();
  if (!w->grpc_server_ || (!on_socket && w->grpc_port_ == 0)) {
    w->engine_->Stop();
    return UnavailableError("cannot listen for gRPC on " +
                            (on_socket ? o.listen : o.host + ":" + std::to_string(o.grpc_port)));
  }
  w->grpc_address_ = on_socket ? o.listen : o.host + ":" + std::to_string(w->grpc_port_);
  w->worker_id_ = !identity.worker_id.empty() ? identity.worker_id : w->grpc_address_;

  if (o.tls_cert.empty()) {
    w->http_ = std::make_unique<httplib::Server>();
  } else {
    // Probes and Prometheus reach /healthz and /metrics over TLS but show no
    // client certificate: tls_client_auth applies to gRPC only.
    w->http_ = std::make_unique<httplib::SSLServer>(o.tls_cert.c_str(), o.tls_key.c_str());
    if (!w->http_->is_valid()) {
      w->grpc_server_->Shutdown();
      w->engine_->Stop();
      return InvalidArgumentError("option tls_cert: cannot serve HTTPS with " + o.tls_cert +
                                  " and " + o.tls_key);
    }
  }
  WorkerServer* self = w.get();
  w->http_->Get("/metrics", [self](const httplib::Request&, httplib::Response& res) {
    res.set_content(self->metrics_->Render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  w->http_->Get("/healthz", [self](const httplib::Request&, httplib::Response& res) {
    if (self->draining_) {
      res.status = 503;
      res.set_content("draining\n", "text/plain");
    } else {
      res.set_content("ok\n", "text/plain");
    }
  });
  if (o.http_port == 0) {
    w->http_port_ = w->http_->bind_to_any_port(o.host);
  } else {
    w->http_port_ = w->http_->bind_to_port(o.host, static_cast<int>(o.http_port))
                        ? static_cast<int>(o.http_port)
                        : -1;
  }
  if (w->http_port_ <= 0) {
    w->grpc_server_->Shutdown();
    w->engine_->Stop();
    return UnavailableError("cannot listen for HTTP on " + o.host + ":" +
                            std::to_string(o.http_port));
  }
  w->http_thread_ = std::thread([self] { self->http_->listen_after_bind(); });
  if (!o.router.empty())
    w->registration_thread_ = std::thread([self] { self->RegistrationLoop(); });
  Log(LogLevel::kInfo, "worker",
      "serving " + c.name + " (" + c.arch_name + ", " + std::to_string(c.n_layer) + " layers) as " +
          w->worker_id_ + ": " + std::to_string(blocks) + " KV blocks of " +
          std::to_string(layout.block_size) + " tokens (" + layout.ToString() + "), " +
          plan.ToString() + ", context " + std::to_string(w->engine_->max_model_len()));
  return w;
}

// Renews this worker's registration with the router every few seconds (TTL
// 15 s), so a router that restarts finds it again; deregisters on shutdown.
void WorkerServer::RegistrationLoop() {
  const std::string address =
      !options_.advertise_address.empty() ? options_.advertise_address : grpc_address_;
  auto stub = v1::RouterRegistry::NewStub(outgoing_->Dial(options_.router));
  bool registered = false;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(shutdown_mu_);
      if (shutdown_cv_.wait_for(lock,
                                registered ? std::chrono::seconds(5) : std::chrono::seconds(1),
                                [this] { return shutdown_started_; })) {
        break;
      }
    }
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
    outgoing_->Authorize(&ctx);
    v1::RegisterWorkerRequest req;
    req.set_address(address);
    req.set_worker_id(worker_id_);
    req.set_ttl_seconds(15);
    v1::RegisterWorkerResponse resp;
    const grpc::Status s = stub->Register(&ctx, req, &resp);
    if (s.ok() != registered) {
      Log(s.ok() ? LogLevel::kInfo : LogLevel::kWarning, "worker",
          s.ok() ? "registered with router " + options_.router + " as " + address
                 : "cannot register with router " + options_.router + ": " + s.error_message());
    }
    registered = s.ok();
  }
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(1));
  outgoing_->Authorize(&ctx);
  v1::DeregisterWorkerRequest req;
  req.set_address(address);
  v1::DeregisterWorkerResponse resp;
  (void)stub->Deregister(&ctx, req, &resp);
}

void WorkerServer::Shutdown(std::chrono::milliseconds grace) {
  {
    std::lock_guard<std::mutex> lock(shutdown_mu_);
    if (shutdown_started_) return;
    shutdown_started_ = true;
  }
  draining_ = true;
  shutdown_cv_.notify_all();  // ends the registration heartbeats
  if (registration_thread_.joinable()) registration_thread_.join();
  // Start() may have failed half way: every piece is optional here.
  if (grpc_server_) {
    if (auto* health = grpc_server_->GetHealthCheckService()) health->SetServingStatus(false);
  }
  if (engine_) {
    engine_->BeginDrain();
    if (!engine_->WaitIdle(grace)) {
      Log(LogLevel::kWarning, "worker", "grace period over; cancelling the remaining requests");
    }
  }
  if (service_) service_->Shutdown();
  if (engine_) engine_->Stop();  // cancels whatever is left; its streams end
  Log(LogLevel::kDebug, "worker", "engine stopped");
  // The engine has ended every request, so its streams are ending now; gRPC
  // would otherwise wait out the whole deadline on idle connections.
  if (grpc_server_)
    grpc_server_->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(500));
  Log(LogLevel::kDebug, "worker", "gRPC server stopped");
  if (http_) http_->stop();
  if (http_thread_.joinable()) http_thread_.join();
  {
    std::lock_guard<std::mutex> lock(shutdown_mu_);
    shutdown_done_ = true;
  }
  shutdown_cv_.notify_all();
}

void WorkerServer::Wait() {
  std::unique_lock<std::mutex> lock(shutdown_mu_);
  shutdown_cv_.wait(lock, [this] { return shutdown_done_; });
}

WorkerServer::~WorkerServer() { Shutdown(std::chrono::milliseconds(0)); }

}  // namespace kvmesh
