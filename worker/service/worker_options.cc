#include "worker/service/worker_options.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "common/log.h"
#include "common/tensor_type.h"
#include "worker/kv/adaptive_order.h"
#include "worker/kv/kv_memory_fit.h"

namespace kvmesh {

void WorkerOptions::Register(ConfigSchema* s) {
  s->AddString("model", &model,
               "GGUF model file (empty: stories260K.gguf from ../shared/models or models/)");
  s->AddString("model_sha256", &model_sha256,
               "expected SHA-256 of the model (implies require_sha256)");
  s->AddBool("require_sha256", &require_sha256,
             "verify the model against model_sha256 or MODEL.sha256 before loading");
  s->AddString("host", &host, "address to listen on (127.0.0.1: loopback only; 0.0.0.0: all)");
  s->AddInt("grpc_port", &grpc_port, 0, 65535, "gRPC port (0: any free port)");
  s->AddString("listen", &listen,
               "serve gRPC on a Unix domain socket instead of TCP: unix:PATH (single-host "
               "deployments where nothing should be reachable over the network; grpc_port is "
               "then unused)");
  s->AddInt("http_port", &http_port, 0, 65535,
            "HTTP port for /metrics and /healthz (0: any free port)");
  s->AddInt("threads", &threads, 0, 1024,
            "threads per CPU device for the forward pass (0: all cores, divided among the "
            "devices)");
  s->AddString("devices", &devices,
               "devices to split the model over: cpu:0 (empty: the default), cpu:0,cpu:1, "
               "cpu:0@0-7,cpu:1@8-15 (pinned to cores), cuda:0, cuda:0,cuda:1, "
               "cuda:0.0,cuda:0.1 (two virtual devices on GPU 0)");
  s->AddString("split", &split, "how several devices share the model: layer or tensor");
  s->AddString("layer_split", &layer_split,
               "layers per device for split layer, e.g. 10,6 (empty: balanced by weight bytes)");
  s->AddString("kv_type", &kv_type,
               "KV cache storage type for K and V: f32, f16, bf16, q8_0, q4_0, q3_nl");
  s->AddString("kv_type_k", &kv_type_k, "K storage type (overrides kv_type for K)");
  s->AddString("kv_type_v", &kv_type_v, "V storage type (overrides kv_type for V)");
  s->AddString("kv_bias", &kv_bias, "K centering table from `kvmesh kv-calibrate` (same model)");
  s->AddString("kv_rotate", &kv_rotate, "Hadamard rotation of K: auto (q8_0/q4_0 pages), on, off");
  s->AddString("kv_rotate_v", &kv_rotate_v, "Hadamard rotation of V: auto, on, off");
  s->AddString("kv_rounding", &kv_rounding, "q4_0 page rounding: min-error or reference");
  s->AddString("kv_memory", &kv_memory,
               "KV cache memory: bytes (512MiB, 2G) or a fraction of the memory left after the "
               "weights (0.3, 30%)");
  s->AddString("kv_host_memory", &kv_host_memory,
               "host-RAM tier for KV blocks evicted from the device: bytes (32GiB) or a fraction "
               "of the host's available memory (0.25, 25%); 0: none");
  s->AddString("kv_window_pages", &kv_window_pages,
               "sliding-window layers keep their own KV pages and release those the window has "
               "passed: off or on (needs kv_host_memory 0 and role both)");
  s->AddInt("block_size", &block_size, 1, 1024, "tokens per KV block");
  s->AddInt("context_length", &context_length, 0, 1 << 24,
            "maximum tokens per sequence (0: the model's, at most 8192; more, up to the "
            "model's training context, when given)");
  s->AddBool("allow_context_overflow", &allow_context_overflow,
             "let context_length exceed the model's training context");
  s->AddInt("max_tokens_per_step", &max_tokens_per_step, 1, 1 << 20,
            "token budget of one engine step");
  s->AddInt("max_running_requests", &max_running_requests, 1, 1 << 16, "requests decoded together");
  s->AddInt("max_waiting_requests", &max_waiting_requests, 0, 1 << 20,
            "queued requests before RESOURCE_EXHAUSTED");
  s->AddBool("prefix_caching", &prefix_caching, "reuse cached KV blocks of shared prefixes");
  s->AddString("kv_eviction", &kv_eviction,
               "which unused KV block is evicted first: lru (least recently used) or adaptive "
               "(least recently used, with a head start for blocks a later request reused, "
               "learned from the evicted blocks that come back)");
  s->AddString("admin_token", &admin_token, "bearer token required by the WorkerAdmin service");
  s->MarkSecret("admin_token");
  s->AddString("tls_cert", &tls_cert,
               "PEM certificate chain: serve gRPC, /metrics and /healthz over TLS (with tls_key); "
               "also the client certificate shown to peers and the router");
  s->AddString("tls_key", &tls_key, "PEM private key of tls_cert");
  s->AddString("tls_ca", &tls_ca,
               "PEM CA bundle that signs the peers' and the router's certificates (and, with "
               "tls_client_auth, the callers'); with tls_cert or tls_ca set, peers and the router "
               "are dialed over TLS (no tls_ca: the system's CAs)");
  s->AddBool("tls_client_auth", &tls_client_auth,
             "mutual TLS on gRPC: callers must present a certificate signed by tls_ca");
  s->AddString("tls_server_name", &tls_server_name,
               "name expected in the peers' and the router's certificates (empty: the host "
               "dialed); for certificates that name a service, not each pod's address");
  s->AddString("service_token", &service_token,
               "bearer token every caller of the Worker service must send (the router's "
               "worker_token); sent on this worker's calls to peers and to the router");
  s->MarkSecret("service_token");
  s->AddString("log_level", &log_level, "debug, info, warning, error");
  s->AddDouble("shutdown_grace_seconds", &shutdown_grace_seconds, 0, 3600,
               "on SIGTERM, time running requests get to finish");
  s->AddString("worker_id", &worker_id, "name in logs and the router (empty: host:grpc_port)");
  s->AddString("role", &role,
               "what routers send here: both, prefill (prompts only; decode workers fetch their "
               "KV pages) or decode (disaggregated serving)");
  s->AddString("router", &router, "router address to register with (optional)");
  s->AddString("advertise_address", &advertise_address,
               "address routers should dial (empty: host:grpc_port)");
}

Status WorkerOptions::Validate() const {
  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) {
    return InvalidArgumentError("option log_level: \"" + log_level +
                                "\" is not one of debug, info, warning, error");
  }
  auto kv = KvOptions();
  if (!kv.ok()) return kv.status();
  auto budget = ParseKvMemoryBudget(kv_memory);
  if (!budget.ok()) return budget.status().WithPrefix("option kv_memory");
  if (auto host = KvHostMemoryBytes(); !host.ok()) return host.status();
  if (auto plan = Plan(); !plan.ok()) return plan.status();
  if (!listen.empty() && (listen.rfind("unix:", 0) != 0 || listen.size() == 5)) {
    return InvalidArgumentError("option listen: \"" + listen +
                                "\" is not unix:PATH (a Unix domain socket path)");
  }
  if (listen.size() > 5 + 107) {  // sun_path holds 108 bytes with its NUL
    return InvalidArgumentError("option listen: the socket path has " +
                                std::to_string(listen.size() - 5) +
                                " bytes; a Unix domain socket path holds at most 107");
  }
  if (role != "both" && role != "prefill" && role != "decode") {
    return InvalidArgumentError("option role: \"" + role +
                                "\" is not one of both, prefill, decode");
  }
  if (!ParseKvEviction(kv_eviction)) {
    return InvalidArgumentError("option kv_eviction: \"" + kv_eviction +
                                "\" is not one of lru, adaptive");
  }
  if (kv_window_pages != "off" && kv_window_pages != "on") {
    return InvalidArgumentError("option kv_window_pages: \"" + kv_window_pages +
                                "\" is not one of off, on");
  }
  if (kv_window_pages == "on") {
    // Both move whole blocks between processes or tiers; with window pages
    // a block's layers have pages of different ids.
    if (auto host = KvHostMemoryBytes(); host.ok() && *host > 0) {
      return InvalidArgumentError(
          "option kv_window_pages: on needs kv_host_memory 0 (the host tier copies whole "
          "blocks, and window pages split a block's layers)");
    }
    if (role != "both") {
      return InvalidArgumentError(
          "option kv_window_pages: on needs role both (a prefill or "
          "decode worker hands whole blocks to another worker)");
    }
  }
  RETURN_IF_ERROR(CheckPemKeyPair(tls_cert, tls_key, "tls_cert", "tls_key"));
  if (!tls_ca.empty()) RETURN_IF_ERROR(CheckPemCertificate(tls_ca, "tls_ca"));
  if (tls_client_auth && (tls_cert.empty() || tls_ca.empty())) {
    return InvalidArgumentError(
        "option tls_client_auth needs tls_cert and tls_key (the server's certificate) and tls_ca "
        "(the CA that signs the callers' certificates)");
  }
  if (!tls_server_name.empty() && tls_cert.empty() && tls_ca.empty()) {
    return InvalidArgumentError("option tls_server_name needs TLS: set tls_ca (or tls_cert)");
  }
  if (grpc_port != 0 && grpc_port == http_port) {
    return InvalidArgumentError("options grpc_port and http_port are both " +
                                std::to_string(grpc_port));
  }
  return Status::Ok();
}

ServerTlsFiles WorkerOptions::ServerTls() const {
  return {tls_cert, tls_key, tls_client_auth ? tls_ca : ""};
}

ClientTlsFiles WorkerOptions::ClientTls() const {
  ClientTlsFiles f;
  f.enabled = !tls_cert.empty() || !tls_ca.empty();
  f.ca = tls_ca;
  f.cert = tls_cert;
  f.key = tls_key;
  f.server_name = tls_server_name;
  return f;
}

StatusOr<int64_t> WorkerOptions::KvHostMemoryBytes() const {
  if (kv_host_memory.empty() || kv_host_memory == "0") return int64_t{0};
  auto budget = ParseKvMemoryBudget(kv_host_memory);
  if (!budget.ok()) return budget.status().WithPrefix("option kv_host_memory");
  if (budget->fraction == 0.0) return static_cast<int64_t>(budget->bytes);
  auto available = ReadMemAvailable();
  if (!available.ok()) return available.status().WithPrefix("option kv_host_memory");
  return static_cast<int64_t>(budget->fraction * static_cast<double>(*available));
}

StatusOr<PlanOptions> WorkerOptions::Plan() const {
  auto plan = PlanOptions::Parse(devices, split, layer_split, static_cast<int>(threads));
  if (!plan.ok()) return plan.status().WithPrefix("option devices/split/layer_split");
  return plan;
}

StatusOr<KvCacheOptions> WorkerOptions::KvOptions() const {
  KvCacheOptions o;
  o.type = kv_type;
  o.type_k = kv_type_k;
  o.type_v = kv_type_v;
  o.bias_path = kv_bias;
  auto rotate = ParseKvRotation(kv_rotate);
  if (!rotate.ok()) return rotate.status().WithPrefix("option kv_rotate");
  o.rotate_k = *rotate;
  auto rotate_v = ParseKvRotation(kv_rotate_v);
  if (!rotate_v.ok()) return rotate_v.status().WithPrefix("option kv_rotate_v");
  o.rotate_v = *rotate_v;
  o.rounding = kv_rounding;
  o.block_size = static_cast<int>(block_size);
  for (const std::string* t : {&kv_type, &kv_type_k, &kv_type_v}) {
    if (t->empty()) continue;
    const auto type = ParseTensorType(*t);
    if (!type || !IsKvStorageType(*type)) {
      return InvalidArgumentError("option kv_type: \"" + *t +
                                  "\" is not a KV cache type (f32, f16, bf16, q8_0, q4_0, q3_nl)");
    }
  }
  if (kv_rounding != "min-error" && kv_rounding != "reference") {
    return InvalidArgumentError("option kv_rounding: \"" + kv_rounding +
                                "\" is not min-error or reference");
  }
  return o;
}

}  // namespace kvmesh
