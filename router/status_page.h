// The router's live status page: GET /status (one HTML page with its own
// script and styles, no external assets, no build step) refreshes itself
// from GET /status.json every 2 s. The JSON:
//   {"router": {"id", "policy", "draining"},
//    "workers": [{"id", "address", "model", "healthy", "running", "waiting",
//                 "inflight", "kv": {"total", "used", "cached", "free"},
//                 "kv_tier": "device" or "device+host",
//                 "kv_host": {"total", "held", "restore_tokens_per_s"},
//                 "kv_type", "split", "devices",
//                 "hit_rate", "requests"}],
//    "decisions": [{"unix_ms", "request_id", "model", "worker", "policy",
//                   "reason", "prompt_tokens", "predicted_cached",
//                   "reported_cached"}]}   (newest first)
// hit_rate is the share of prompt tokens the worker served from its prefix
// cache over the requests this router sent it (null before any).
#pragma once

#include <string>
#include <string_view>

#include "router/registry.h"
#include "router/routing_log.h"

namespace kvmesh::router {

struct StatusSource {
  Registry* registry = nullptr;
  const RoutingLog* log = nullptr;
  std::string router_id;
  std::string policy;
  bool draining = false;
};

std::string StatusJson(const StatusSource& source);
std::string_view StatusHtml();

}  // namespace kvmesh::router
