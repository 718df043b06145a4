// WorkerOptions: every setting of kvmesh-worker, with its flag, YAML key and
// environment variable (KVMESH_WORKER_*) declared in one place.
#pragma once

#include <cstdint>
#include <string>

#include "common/config_schema.h"
#include "common/status.h"

namespace kvmesh {

struct WorkerOptions {
  std::string model;  // empty: the default model
  std::string model_sha256;
  bool require_sha256 = false;
  std::string host = "127.0.0.1";
  int64_t grpc_port = 50051;  // 0: pick a free port
  int64_t http_port = 9090;   // /metrics and /healthz; 0: pick a free port
  int64_t threads = 0;        // 0: all cores
  std::string kv_type = "f16";
  std::string kv_memory = "256MiB";  // bytes ("512MiB", "2G") or a fraction of free memory ("0.3")
  int64_t block_size = 16;
  int64_t context_length = 0;  // 0: the model's training context
  int64_t max_tokens_per_step = 512;
  int64_t max_running_requests = 64;
  int64_t max_waiting_requests = 256;
  bool prefix_caching = true;
  std::string admin_token;  // required by the WorkerAdmin service when set
  std::string log_level = "info";
  double shutdown_grace_seconds = 30;
  std::string worker_id;          // default: host:grpc_port
  std::string router;             // router address to register with (optional)
  std::string advertise_address;  // address the router should dial (default host:port)

  void Register(ConfigSchema* schema);
  Status Validate() const;
};

// "512MiB" / "2G" / "1048576" → bytes; "0.3" → a fraction in (0, 1].
struct MemoryAmount {
  int64_t bytes = 0;
  double fraction = 0;  // used when bytes == 0
};
StatusOr<MemoryAmount> ParseMemoryAmount(const std::string& text);

}  // namespace kvmesh
