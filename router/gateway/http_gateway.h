// HttpGateway: the router's HTTP front door. It speaks the OpenAI and
// Anthropic HTTP APIs, translates them to the client protos, and serves them
// through an InferenceCore (the routing core, or a fake in tests).
//
// Routes:
//   POST /v1/completions, /v1/chat/completions   OpenAI (streaming or not)
//   POST /v1/messages                            Anthropic (streaming or not)
//   GET  /v1/models, /v1/models/{id}             OpenAI model list/object
//   GET  /healthz                                200 "ok", or 503 + reason
//   GET  /metrics                                text from options.metrics_text
//   GET  /status, /status.json                   the live status page and its data
// With api_keys configured, every /v1/ route needs one, given as
// "Authorization: Bearer KEY" or "x-api-key: KEY" (OpenAI's and Anthropic's
// SDKs send one or the other); /healthz and /metrics stay open for probes and
// scrapers. Errors carry the route's API format and the status mapping of
// http_errors.h; 429 adds Retry-After. Responses a worker served carry
// "x-kvmesh-worker: <worker>", and every generation "x-request-id".
//
// Streaming: the handler waits for the core's first message, up to one
// keepalive_interval or until a worker reports a prefill chunk done, so a
// request that fails early (bad input, overload) still gets its HTTP error
// status; after that the stream is answered 200 and errors become an error
// event in the API's format. A write that fails (the client went away)
// cancels the generation. An idle stream gets the API's keep-alive every
// keepalive_interval (Anthropic: a ping event; OpenAI: an SSE comment), and
// a long prefill one per chunk (at most one per 100 ms): those writes notice
// a client that left while nothing was generated, within two chunks of a
// prefill. A non-streamed generation runs to its end even if the client
// leaves (nothing can be written before its body to find out).
//
// Threads: Start() serves on a background thread with a pool of
// `num_threads` connection threads; each streamed response also runs its
// core call on a thread of its own (generation_stream.h). A stream holds its
// connection thread until it ends, so size num_threads for the concurrent
// streams expected. The InferenceCore and callbacks must be safe to call from
// many threads at once and must outlive the gateway. Start() and Stop() are
// for the owning thread; Stop() (also run by the destructor) cancels open
// streams and returns once every connection thread has finished.
//
// Start() ignores SIGPIPE for the whole process: a write to a client that
// went away (over TLS, or through a cpp-httplib built without MSG_NOSIGNAL)
// would otherwise kill the router.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "router/gateway/anthropic_api.h"
#include "router/gateway/generation_result.h"
#include "router/gateway/http_errors.h"
#include "router/gateway/response_store.h"
#include "router/inference_core.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace kvmesh::router {
class KeyRateLimiter;
}  // namespace kvmesh::router

namespace kvmesh::router::gateway {

class StreamEncoder;

struct GatewayOptions {
  std::string host = "127.0.0.1";
  int port = 0;  // 0: the system picks a free port; port() reports it
  // Accepted API keys; empty: no authentication.
  std::vector<std::string> api_keys;
  // Per-key request rate (indexes of api_keys); null: no limit.
  std::shared_ptr<KeyRateLimiter> rate_limiter;
  size_t max_body_bytes = 16u << 20;  // larger bodies get 413
  int num_threads = 64;
  // Both set: serve HTTPS with this PEM certificate (chain) and key.
  std::string tls_cert_file;
  std::string tls_key_file;
  std::string tls_client_ca_file;  // mutual TLS: clients need a certificate it signed
  int retry_after_seconds = 1;     // Retry-After on 429
  // Anthropic system blocks kept out of the prompt (anthropic_api.h).
  std::vector<std::string> volatile_prefixes = {
      std::string(AnthropicParseOptions::kDefaultVolatilePrefix)};
  std::chrono::milliseconds keepalive_interval{5000};
  // Stored Responses API responses (previous_response_id).
  ResponseStoreOptions response_store;
  // Text for GET /metrics (Prometheus exposition format); unset: 404.
  std::function<std::string()> metrics_text;
  // The status page's data (GET /status.json) and page (GET /status);
  // unset: 404.
  std::function<std::string()> status_json;
  std::string status_html;
  // Readiness for GET /healthz; unset: always healthy.
  std::function<Status()> health;
  // Called after each response with its route pattern ("/v1/messages", or
  // "unmatched") and HTTP status, e.g. to count requests by route and outcome.
  std::function<void(std::string_view route, int http_status)> on_response;
};

class HttpGateway {
 public:
  HttpGateway(InferenceCore& core, GatewayOptions options);
  ~HttpGateway();

  HttpGateway(const HttpGateway&) = delete;
  HttpGateway& operator=(const HttpGateway&) = delete;

  // Binds and starts serving; returns once the server accepts connections.
  // Errors: INVALID_ARGUMENT for half a TLS configuration or certificate
  // files that do not load, UNAVAILABLE when the address cannot be bound.
  Status Start();
  void Stop();

  int port() const { return port_; }
  bool tls() const { return !options_.tls_cert_file.empty(); }

 private:
  using CoreCall = std::function<Status(const MessageCallback&)>;
  // Builds the non-streamed response body from a finished generation.
  using ResponseBuilder = std::function<std::string(const GenerationResult&)>;

  void RegisterRoutes();
  void HandleCompletions(const httplib::Request& req, httplib::Response& res);
  void HandleChatCompletions(const httplib::Request& req, httplib::Response& res);
  void HandleMessages(const httplib::Request& req, httplib::Response& res);
  void HandleCountTokens(const httplib::Request& req, httplib::Response& res);
  AnthropicParseOptions AnthropicOptions() const;
  void HandleResponses(const httplib::Request& req, httplib::Response& res);
  void HandleGetResponse(const httplib::Request& req, httplib::Response& res);
  void HandleModels(const httplib::Request& req, httplib::Response& res);
  void HandleModel(const httplib::Request& req, httplib::Response& res);

  // Sends 401 and returns false unless the request carries an accepted key.
  bool Authorize(const httplib::Request& req, httplib::Response& res, ApiFormat format) const;
  void SendError(httplib::Response& res, ApiFormat format, const Status& status) const;
  // Runs `call` to its end and answers with `build(result)`.
  void ServeWhole(httplib::Response& res, ApiFormat format, const CoreCall& call,
                  const ResponseBuilder& build) const;
  // Streams `call` through `encoder`.
  void ServeStream(httplib::Response& res, ApiFormat format, CoreCall call,
                   std::unique_ptr<StreamEncoder> encoder) const;
  // The model to name in responses: `requested`, or the only model served.
  std::string ModelName(const std::string& requested) const;

  InferenceCore& core_;
  GatewayOptions options_;
  ResponseStore responses_;
  std::unique_ptr<httplib::Server> server_;
  std::thread serve_thread_;
  std::atomic<bool> listen_ended_{false};  // set by serve_thread_
  int listen_fd_ = -1;                     // the socket cpp-httplib bound
  int port_ = 0;
};

}  // namespace kvmesh::router::gateway
