// RouterOptions: every setting of kvmesh-router, with its flag, YAML key and
// environment variable (KVMESH_ROUTER_*) declared in one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/config_schema.h"
#include "common/grpc_security.h"
#include "common/status.h"
#include "router/policies/policy.h"

namespace kvmesh::router {

struct RouterOptions {
  std::vector<std::string> workers;  // static members, HOST:PORT
  std::string workers_dns;           // NAME:PORT, re-resolved every dns_refresh_seconds
  double dns_refresh_seconds = 10;
  std::string host = "127.0.0.1";
  int64_t grpc_port = 50050;  // 0: any free port
  int64_t http_port = 8080;   // OpenAI/Anthropic gateway, /metrics, /healthz; 0: any free port
  std::string policy = "prefix";
  double prefix_tokens_per_running_request = 32;
  double prefix_default_prefill_tokens_per_s = 2000;
  double prefix_guard_ratio = 2.0;
  int64_t prefix_guard_slack = 4;
  bool prefix_host_tier = true;
  double prefix_displacement_weight = 1.0;
  double prefix_live_session_weight = 1.0;
  double prefix_refill_weight = 1.0;
  double prefix_session_growth_weight = 0.0;
  double prefix_session_load_weight = 1.0;
  bool prefix_peer_fetch = false;
  double prefix_fetch_tokens_per_s = 50000;
  double prefix_fetch_overhead_ms = 5;
  int64_t prefix_fetch_holder_step_tokens = 512;
  int64_t disagg_min_prompt_tokens = 256;
  int64_t decision_sample = 64;
  double api_key_rate = 0;  // requests per second per API key; 0: no limit
  double api_key_burst = 10;
  double approx_prefix_match_threshold = 0.5;
  int64_t approx_prefix_balance_abs_threshold = 32;
  double approx_prefix_balance_rel_threshold = 1.0001;
  int64_t approx_prefix_max_tokens_per_worker = 1 << 20;
  std::vector<std::string> api_keys;
  std::string chat_template;               // family name overriding the models' templates
  std::vector<std::string> model_aliases;  // PATTERN=MODEL (router/model_names.h)
  bool strict_model_names = false;
  bool log_request_text = false;
  std::vector<std::string> volatile_prefixes = {"x-anthropic-billing-header:"};
  int64_t max_attempts = 3;
  int64_t default_max_tokens = 256;
  double request_timeout_seconds = 600;
  double poll_interval_seconds = 0.2;
  double optimistic_ttl_seconds = 20;
  std::string tls_cert;
  std::string tls_key;
  std::string tls_client_ca;  // mTLS on gRPC and HTTPS: clients need a certificate it signed
  // How the router dials workers (docs/operations.md, "TLS and service
  // tokens"): TLS when worker_tls_ca or worker_tls_cert is set.
  std::string worker_tls_ca;
  std::string worker_tls_cert;
  std::string worker_tls_key;
  std::string worker_tls_server_name;
  std::string worker_token;  // sent to workers; required from workers that register
  int64_t http_threads = 64;
  std::string log_level = "info";
  std::string router_id;
  double shutdown_grace_seconds = 30;

  void Register(ConfigSchema* schema);
  Status Validate() const;
  PrefixPolicyWeights weights() const;
  ApproxPrefixPolicyOptions approx_prefix() const;
  ClientTlsFiles WorkerTls() const;
};

}  // namespace kvmesh::router
