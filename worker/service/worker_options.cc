#include "worker/service/worker_options.h"

#include <cctype>
#include <cmath>
#include <cstdlib>

#include "common/log.h"
#include "common/tensor_type.h"

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
  s->AddInt("http_port", &http_port, 0, 65535,
            "HTTP port for /metrics and /healthz (0: any free port)");
  s->AddInt("threads", &threads, 0, 1024, "CPU threads for the forward pass (0: all cores)");
  s->AddString("kv_type", &kv_type, "KV cache storage type: f16, f32");
  s->AddString("kv_memory", &kv_memory,
               "KV cache memory: bytes (512MiB, 2G) or a fraction of free memory (0.3)");
  s->AddInt("block_size", &block_size, 1, 1024, "tokens per KV block");
  s->AddInt("context_length", &context_length, 0, 1 << 24,
            "maximum tokens per sequence (0: the model's)");
  s->AddInt("max_tokens_per_step", &max_tokens_per_step, 1, 1 << 20,
            "token budget of one engine step");
  s->AddInt("max_running_requests", &max_running_requests, 1, 1 << 16, "requests decoded together");
  s->AddInt("max_waiting_requests", &max_waiting_requests, 0, 1 << 20,
            "queued requests before RESOURCE_EXHAUSTED");
  s->AddBool("prefix_caching", &prefix_caching, "reuse cached KV blocks of shared prefixes");
  s->AddString("admin_token", &admin_token, "bearer token required by the WorkerAdmin service");
  s->MarkSecret("admin_token");
  s->AddString("log_level", &log_level, "debug, info, warning, error");
  s->AddDouble("shutdown_grace_seconds", &shutdown_grace_seconds, 0, 3600,
               "on SIGTERM, time running requests get to finish");
  s->AddString("worker_id", &worker_id,
               "name in logs and the router (empty: host:grpc_port)");
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
  const auto type = ParseTensorType(kv_type);
  if (!type)
    return InvalidArgumentError("option kv_type: \"" + kv_type + "\" is not a tensor type");
  auto mem = ParseMemoryAmount(kv_memory);
  if (!mem.ok()) return mem.status().WithPrefix("option kv_memory");
  if (grpc_port != 0 && grpc_port == http_port) {
    return InvalidArgumentError("options grpc_port and http_port are both " +
                                std::to_string(grpc_port));
  }
  return Status::Ok();
}

StatusOr<MemoryAmount> ParseMemoryAmount(const std::string& text) {
  MemoryAmount out;
  if (text.empty()) return InvalidArgumentError("empty memory amount");
  char* end = nullptr;
  const double value = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || !std::isfinite(value) || value <= 0) {
    return InvalidArgumentError("\"" + text + "\" is not a positive amount (e.g. 512MiB, 2G, 0.3)");
  }
  std::string unit(end);
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (unit.empty() && value <= 1.0 && text.find('.') != std::string::npos) {
    out.fraction = value;
    return out;
  }
  double scale = 1;
  if (unit.empty() || unit == "b") {
    scale = 1;
  } else if (unit == "k" || unit == "kib" || unit == "kb") {
    scale = 1024.0;
  } else if (unit == "m" || unit == "mib" || unit == "mb") {
    scale = 1024.0 * 1024;
  } else if (unit == "g" || unit == "gib" || unit == "gb") {
    scale = 1024.0 * 1024 * 1024;
  } else if (unit == "t" || unit == "tib" || unit == "tb") {
    scale = 1024.0 * 1024 * 1024 * 1024;
  } else {
    return InvalidArgumentError("\"" + text + "\" has an unknown unit (use KiB, MiB, GiB, TiB)");
  }
  out.bytes = static_cast<int64_t>(value * scale);
  if (out.bytes <= 0) return InvalidArgumentError("\"" + text + "\" is less than one byte");
  return out;
}

}  // namespace kvmesh
