#include "router/router_options.h"

#include "common/log.h"
#include "router/chat/chat_template.h"
#include "router/model_names.h"
#include "router/worker_set.h"

namespace kvmesh::router {

void RouterOptions::Register(ConfigSchema* s) {
  s->AddStringList("workers", &workers, "workers to route to, HOST:PORT[,HOST:PORT…]");
  s->AddString("workers_dns", &workers_dns,
               "DNS name whose every address is a worker, NAME:PORT (a headless service)");
  s->AddDouble("dns_refresh_seconds", &dns_refresh_seconds, 0.5, 3600,
               "how often workers_dns is re-resolved");
  s->AddString("host", &host, "address to listen on (127.0.0.1: loopback only; 0.0.0.0: all)");
  s->AddInt("grpc_port", &grpc_port, 0, 65535,
            "gRPC port: Inference and RouterRegistry (0: any free port)");
  s->AddInt("http_port", &http_port, 0, 65535,
            "HTTP port: OpenAI/Anthropic APIs, /metrics, /healthz (0: any)");
  s->AddString("policy", &policy,
               "routing policy: prefix, least_load, round_robin, approx_prefix (a baseline "
               "that guesses caches from its own routing, without KV events)");
  s->AddDouble("prefix_tokens_per_running_request", &prefix_tokens_per_running_request, 0, 1e7,
               "prefix policy: load of one request on a worker, in prompt tokens");
  s->AddDouble("prefix_default_prefill_tokens_per_s", &prefix_default_prefill_tokens_per_s, 1, 1e9,
               "prefix policy: prefill speed assumed before a worker reports one");
  s->AddDouble("prefix_guard_ratio", &prefix_guard_ratio, 1, 1000,
               "prefix policy: load imbalance (× least load + 1) that sends a request to the "
               "least-loaded worker");
  s->AddInt("prefix_guard_slack", &prefix_guard_slack, 0, 1 << 20,
            "prefix policy: requests added to the guard limit");
  s->AddBool("prefix_host_tier", &prefix_host_tier,
             "prefix policy: count blocks in a worker's host-RAM tier as hits priced by its "
             "measured restore speed (off: treat them as misses)");
  s->AddDouble("prefix_displacement_weight", &prefix_displacement_weight, 0, 100,
               "prefix policy: extra cost of each prompt token that would evict a cached prefix "
               "on a full worker (0: none)");
  s->AddDouble("prefix_live_session_weight", &prefix_live_session_weight, 0, 100,
               "prefix policy: how much the live sessions a worker's cache holds (by session id) "
               "count toward what a request placed there would evict (0: not at all)");
  s->AddDouble("prefix_refill_weight", &prefix_refill_weight, 0, 100,
               "prefix policy: how much a worker's measured cache refills (blocks stored again "
               "soon after their eviction) multiply what a request placed there would evict "
               "(0: not at all)");
  s->AddDouble("prefix_session_growth_weight", &prefix_session_growth_weight, 0, 100,
               "prefix policy: how much of the live sessions' mean context a named session placed "
               "on a worker counts toward what it would evict there, for the turns it will add "
               "(0: only its request's uncached tokens)");
  s->AddDouble("prefix_session_load_weight", &prefix_session_load_weight, 0, 100,
               "prefix policy: how much of a turn each live named session on a worker counts as "
               "work queued ahead of a named session placed there (0: not at all)");
  s->AddBool("prefix_peer_fetch", &prefix_peer_fetch,
             "prefix policy: let a worker fetch the prompt blocks it lacks from the worker "
             "holding them (KV pages over gRPC) when that is cheaper than computing them");
  s->AddDouble("prefix_fetch_tokens_per_s", &prefix_fetch_tokens_per_s, 1, 1e12,
               "prefix policy: fetch speed assumed for a worker that has not measured its own");
  s->AddDouble("prefix_fetch_overhead_ms", &prefix_fetch_overhead_ms, 0, 60000,
               "prefix policy: fixed cost of one peer fetch (a round trip and the holder's read)");
  s->AddInt("prefix_fetch_holder_step_tokens", &prefix_fetch_holder_step_tokens, 0, 1 << 20,
            "prefix policy: a worker's step in prompt tokens when it does not report one (a fetch "
            "waits behind the holder's step; a request mostly cached on a worker, about one step)");
  s->AddInt("decision_sample", &decision_sample, 0, kMaxWorkersPerModel,
            "a model with more healthy workers than twice this weighs, per request, the "
            "workers holding part of the prompt, the session's worker and this many others "
            "drawn at random (0: weigh every worker)");
  s->AddInt("disagg_min_prompt_tokens", &disagg_min_prompt_tokens, 0, 1 << 24,
            "disaggregated serving (workers with role prefill): prompts whose decode worker "
            "would compute at least this many tokens are computed on a prefill worker first");
  s->AddDouble("approx_prefix_match_threshold", &approx_prefix_match_threshold, 0, 1,
               "approx_prefix policy: fraction of the prompt a remembered prefix must cover to "
               "route to its worker");
  s->AddInt("approx_prefix_balance_abs_threshold", &approx_prefix_balance_abs_threshold, 0, 1 << 20,
            "approx_prefix policy: requests the busiest worker must carry over the least busy "
            "one before load outweighs the cache");
  s->AddDouble("approx_prefix_balance_rel_threshold", &approx_prefix_balance_rel_threshold, 1, 1000,
               "approx_prefix policy: and how many times as many");
  s->AddInt("approx_prefix_max_tokens_per_worker", &approx_prefix_max_tokens_per_worker, 1,
            int64_t{1} << 40,
            "approx_prefix policy: prompt tokens remembered per worker (least recent forgotten)");
  s->AddStringList("api_keys", &api_keys, "accepted API keys (empty: none needed)");
  s->MarkSecret("api_keys");
  s->AddDouble("api_key_rate", &api_key_rate, 0, 1e9,
               "requests per second each API key may start on average (0: no limit); past it, "
               "429 with Retry-After (HTTP) or RESOURCE_EXHAUSTED (gRPC)");
  s->AddDouble("api_key_burst", &api_key_burst, 1, 1e9,
               "requests an API key may start at once before api_key_rate applies");
  s->AddString("chat_template", &chat_template,
               "chat template family for every model (empty: from each model)");
  s->AddStringList("model_alias", &model_aliases,
                   "requested model names mapped to served models, PATTERN=MODEL, '*' matching "
                   "any run (e.g. claude-*=qwen3)");
  s->AddBool("strict_model_names", &strict_model_names,
             "answer an unknown model name with 404 even when one model is served");
  s->AddStringList("volatile_prefixes", &volatile_prefixes,
                   "Anthropic system blocks starting with one of these change every request "
                   "and are dropped to keep the cached prefix stable (empty: keep them)");
  s->AddInt("max_attempts", &max_attempts, 1, 10,
            "workers tried for a request that fails before its first token");
  s->AddInt("default_max_tokens", &default_max_tokens, 1, 1 << 20,
            "max_tokens when a request gives none");
  s->AddDouble("request_timeout_seconds", &request_timeout_seconds, 1, 86400,
               "longest a request may go without progress (no token, no prefill chunk); a "
               "long prefill that keeps moving is never cut off");
  s->AddDouble("poll_interval_seconds", &poll_interval_seconds, 0.01, 60,
               "how often each worker's load is polled");
  s->AddDouble("optimistic_ttl_seconds", &optimistic_ttl_seconds, 0.1, 3600,
               "how long a routed prefix counts as cached before the worker's events confirm it");
  s->AddString("tls_cert", &tls_cert,
               "PEM certificate: serve HTTPS and gRPC over TLS (with tls_key)");
  s->AddString("tls_key", &tls_key, "PEM private key for tls_cert");
  s->AddString("tls_client_ca", &tls_client_ca,
               "PEM CA bundle: mutual TLS, clients of gRPC and HTTPS must present a certificate "
               "it signed (needs tls_cert)");
  s->AddString("worker_tls_ca", &worker_tls_ca,
               "PEM CA bundle that signs the workers' certificates: dial workers over TLS");
  s->AddString("worker_tls_cert", &worker_tls_cert,
               "PEM client certificate shown to workers that ask for one (mutual TLS; with "
               "worker_tls_key; dials workers over TLS, with the system's CAs when "
               "worker_tls_ca is empty)");
  s->AddString("worker_tls_key", &worker_tls_key, "PEM private key of worker_tls_cert");
  s->AddString("worker_tls_server_name", &worker_tls_server_name,
               "name expected in the workers' certificates (empty: the host dialed)");
  s->AddString("worker_token", &worker_token,
               "bearer token sent on every call to a worker (its service_token), and required "
               "from workers that register themselves");
  s->MarkSecret("worker_token");
  s->AddInt("http_threads", &http_threads, 4, 4096, "HTTP connection threads (concurrent streams)");
  s->AddString("log_level", &log_level, "debug, info, warning, error");
  s->AddBool("log_request_text", &log_request_text,
             "log each request's prompt and output text (at info level); off, logs hold "
             "neither at any level");
  s->AddString("router_id", &router_id, "name in logs (empty: host:grpc_port)");
  s->AddDouble("shutdown_grace_seconds", &shutdown_grace_seconds, 0, 3600,
               "on SIGTERM, time requests in flight (streams too) get to finish; /healthz "
               "answers 503 meanwhile");
}

Status RouterOptions::Validate() const {
  auto policy_or = MakePolicy(policy, weights(), approx_prefix());
  if (!policy_or.ok()) return policy_or.status().WithPrefix("option policy");
  LogLevel level;
  if (!ParseLogLevel(log_level, &level)) {
    return InvalidArgumentError("option log_level: \"" + log_level +
                                "\" is not one of debug, info, warning, error");
  }
  if (!chat_template.empty()) {
    auto t = ChatTemplate::FromName(chat_template);
    if (!t.ok()) return t.status().WithPrefix("option chat_template");
  }
  for (const std::string& a : model_aliases) {
    auto alias = ParseModelAlias(a);
    if (!alias.ok()) return alias.status().WithPrefix("option model_alias");
  }
  RETURN_IF_ERROR(CheckPemKeyPair(tls_cert, tls_key, "tls_cert", "tls_key"));
  if (!tls_client_ca.empty()) {
    if (tls_cert.empty()) {
      return InvalidArgumentError("option tls_client_ca needs tls_cert and tls_key");
    }
    RETURN_IF_ERROR(CheckPemCertificate(tls_client_ca, "tls_client_ca"));
  }
  RETURN_IF_ERROR(
      CheckPemKeyPair(worker_tls_cert, worker_tls_key, "worker_tls_cert", "worker_tls_key"));
  if (!worker_tls_ca.empty()) RETURN_IF_ERROR(CheckPemCertificate(worker_tls_ca, "worker_tls_ca"));
  if (!worker_tls_server_name.empty() && !WorkerTls().enabled) {
    return InvalidArgumentError(
        "option worker_tls_server_name needs TLS to workers: set worker_tls_ca");
  }
  for (const std::string& w : workers) {
    if (w.rfind(':') == std::string::npos) {
      return InvalidArgumentError("option workers: \"" + w + "\" is not HOST:PORT");
    }
  }
  if (grpc_port != 0 && grpc_port == http_port) {
    return InvalidArgumentError("options grpc_port and http_port are both " +
                                std::to_string(grpc_port));
  }
  return Status::Ok();
}

ClientTlsFiles RouterOptions::WorkerTls() const {
  ClientTlsFiles f;
  f.enabled = !worker_tls_ca.empty() || !worker_tls_cert.empty();
  f.ca = worker_tls_ca;
  f.cert = worker_tls_cert;
  f.key = worker_tls_key;
  f.server_name = worker_tls_server_name;
  return f;
}

PrefixPolicyWeights RouterOptions::weights() const {
  PrefixPolicyWeights w;
  w.tokens_per_running_request = prefix_tokens_per_running_request;
  w.default_prefill_tokens_per_s = prefix_default_prefill_tokens_per_s;
  w.guard_ratio = prefix_guard_ratio;
  w.guard_slack = static_cast<int32_t>(prefix_guard_slack);
  w.use_host_tier = prefix_host_tier;
  w.displacement_weight = prefix_displacement_weight;
  w.live_session_weight = prefix_live_session_weight;
  w.refill_weight = prefix_refill_weight;
  w.session_growth_weight = prefix_session_growth_weight;
  w.session_load_weight = prefix_session_load_weight;
  w.peer_fetch = prefix_peer_fetch;
  w.default_fetch_tokens_per_s = prefix_fetch_tokens_per_s;
  w.fetch_overhead_seconds = prefix_fetch_overhead_ms / 1000;
  w.fetch_holder_step_tokens = static_cast<int32_t>(prefix_fetch_holder_step_tokens);
  return w;
}

ApproxPrefixPolicyOptions RouterOptions::approx_prefix() const {
  ApproxPrefixPolicyOptions a;
  a.match_threshold = approx_prefix_match_threshold;
  a.balance_abs_threshold = static_cast<int32_t>(approx_prefix_balance_abs_threshold);
  a.balance_rel_threshold = approx_prefix_balance_rel_threshold;
  a.max_tokens_per_worker = approx_prefix_max_tokens_per_worker;
  return a;
}

}  // namespace kvmesh::router
