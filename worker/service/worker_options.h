// WorkerOptions: every setting of kvmesh-worker, with its flag, YAML key and
// environment variable (KVMESH_WORKER_*) declared in one place.
#pragma once

#include <cstdint>
#include <string>

#include "common/config_schema.h"
#include "common/grpc_security.h"
#include "common/status.h"
#include "worker/kv/kv_cache_options.h"
#include "worker/runtime/parallel_plan.h"

namespace kvmesh {

struct WorkerOptions {
  std::string model;  // empty: the default model
  std::string model_sha256;
  bool require_sha256 = false;
  std::string host = "127.0.0.1";
  int64_t grpc_port = 50051;  // 0: pick a free port
  // gRPC on a Unix domain socket instead ("unix:/run/kvmesh/worker.sock");
  // empty: TCP on host:grpc_port.
  std::string listen;
  int64_t http_port = 9090;     // /metrics and /healthz; 0: pick a free port
  int64_t threads = 0;          // per CPU device; 0: all cores, divided among the devices
  std::string devices;          // empty: cpu:0
  std::string split = "layer";  // with several devices: layer or tensor
  std::string layer_split;      // layers per device, e.g. "10,6" (empty: balanced)
  std::string kv_type = "f16";  // K and V; kv_type_k / kv_type_v override one
  std::string kv_type_k;
  std::string kv_type_v;
  std::string kv_bias;               // K centering table from `kvmesh kv-calibrate`
  std::string kv_rotate = "auto";    // K rotation: auto (quantized pages), on, off
  std::string kv_rotate_v = "auto";  // V rotation, likewise
  std::string kv_rounding = "min-error";
  std::string kv_memory = "512MiB";  // bytes ("512MiB", "2G") or a fraction ("0.3", "30%")
  std::string kv_host_memory = "0";  // host tier: bytes or a fraction of MemAvailable; 0: none
  // Window pages for sliding-window layers: off, or on (pages the window has
  // passed are released; docs/kv-cache.md, "Sliding windows").
  std::string kv_window_pages = "off";
  int64_t block_size = 16;
  int64_t context_length = 0;  // 0: the model's training context, at most 8192
  // Lets context_length exceed the model's training context (positions it
  // never saw: quality degrades).
  bool allow_context_overflow = false;
  int64_t max_tokens_per_step = 512;
  int64_t max_running_requests = 64;
  int64_t max_waiting_requests = 256;
  bool prefix_caching = true;
  // Which free KV block goes first: lru or adaptive (docs/kv-cache.md,
  // "Eviction").
  std::string kv_eviction = "lru";
  std::string admin_token;  // required by the WorkerAdmin service when set
  // Security of the gRPC port and of this worker's calls (docs/operations.md,
  // "TLS and service tokens"). A worker with tls_cert or tls_ca dials its
  // peers and the router over TLS, with tls_cert as its client certificate.
  std::string tls_cert;
  std::string tls_key;
  std::string tls_ca;
  bool tls_client_auth = false;  // mTLS: callers need a certificate tls_ca signed
  std::string tls_server_name;   // the name peers' and the router's certificates carry
  std::string service_token;     // required from every caller; sent to peers and the router
  std::string log_level = "info";
  double shutdown_grace_seconds = 30;
  std::string worker_id;  // default: host:grpc_port
  // What the router sends here (disaggregated serving): both, prefill
  // (prompts only; their pages are fetched by decode workers) or decode.
  std::string role = "both";
  std::string router;             // router address to register with (optional)
  std::string advertise_address;  // address the router should dial (default host:port)

  void Register(ConfigSchema* schema);
  Status Validate() const;
  // The KV options as the engine-independent KvCacheOptions.
  StatusOr<KvCacheOptions> KvOptions() const;
  // The host tier's size in bytes (0: none).
  StatusOr<int64_t> KvHostMemoryBytes() const;
  // The device options as PlanOptions.
  StatusOr<PlanOptions> Plan() const;
  // The gRPC server's TLS files, and how this worker dials peers and the
  // router (TLS, its certificate, the token).
  ServerTlsFiles ServerTls() const;
  ClientTlsFiles ClientTls() const;
};

// What context_length 0 means: the model's context, capped here (a model
// trained for 128k tokens would otherwise need its whole context's KV memory
// per sequence).
inline constexpr int64_t kDefaultMaxContext = 8192;

}  // namespace kvmesh
