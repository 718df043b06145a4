#include "router/gateway/http_gateway.h"

#include <httplib.h>
#include <sys/socket.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <random>
#include <utility>

#include "common/log.h"
#include "common/secret_compare.h"
#include "router/gateway/anthropic_api.h"
#include "router/gateway/anthropic_stream.h"
#include "router/gateway/generation_stream.h"
#include "router/gateway/json_fields.h"
#include "router/gateway/openai_api.h"
#include "router/gateway/openai_stream.h"
#include "router/gateway/responses_api.h"
#include "router/gateway/responses_stream.h"
#include "router/gateway/sse_stream_writer.h"
#include "router/key_rate_limiter.h"

namespace kvmesh::router::gateway {
namespace {

// Connections the kernel may queue before a thread accepts them.
constexpr int kListenBacklog = 4096;
constexpr std::string_view kJsonType = "application/json";
constexpr std::string_view kWorkerHeader = "x-kvmesh-worker";
constexpr std::string_view kRequestIdHeader = "x-request-id";

// 96 random bits as hex: unique enough to name a request in logs and ids.
std::string NewRequestId() {
  // From the system's random source (not a seeded generator whose state
  // could be rebuilt from ids seen): stored responses are named by them.
  thread_local std::random_device random_bits;
  unsigned long long words[3];
  for (unsigned long long& w : words) w = random_bits();
  char text[32];
  std::snprintf(text, sizeof(text), "%08llx%08llx%08llx", words[0] & 0xffffffffull,
                words[1] & 0xffffffffull, words[2] & 0xffffffffull);
  return text;
}

int64_t UnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The token of "Authorization: Bearer <token>" (scheme case-insensitive).
std::string BearerToken(const httplib::Request& req) {
  std::string header = req.get_header_value("Authorization");
  constexpr std::string_view kScheme = "bearer ";
  if (header.size() <= kScheme.size()) return "";
  for (size_t i = 0; i < kScheme.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(header[i])) != kScheme[i]) return "";
  }
  std::string_view token(header);
  token.remove_prefix(kScheme.size());
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return std::string(token);
}

// Who a stored response belongs to: a hash of the request's API key (the
// same for every request when the gateway takes no keys).
std::string KeyOwner(const httplib::Request& req) {
  std::string key = BearerToken(req);
  if (key.empty()) key = req.get_header_value("x-api-key");
  return std::to_string(std::hash<std::string>{}("kvmesh-response-owner\n" + key));
}

ApiFormat FormatForPath(std::string_view path) {
  return path.rfind("/v1/messages", 0) == 0 ? ApiFormat::kAnthropic : ApiFormat::kOpenAi;
}

std::string_view RouteLabel(std::string_view path) {
  for (std::string_view route :
       {"/v1/completions", "/v1/chat/completions", "/v1/messages", "/v1/messages/count_tokens",
        "/v1/models", "/v1/responses", "/healthz", "/metrics", "/status", "/status.json"}) {
    if (path == route) return route;
  }
  if (path.rfind("/v1/models/", 0) == 0) return "/v1/models/{id}";
  if (path.rfind("/v1/responses/", 0) == 0) return "/v1/responses/{id}";
  return "unmatched";
}

void SetWorkerHeader(httplib::Response& res, const std::string& worker) {
  if (!worker.empty()) res.set_header(std::string(kWorkerHeader), worker);
}

}  // namespace

HttpGateway::HttpGateway(InferenceCore& core, GatewayOptions options)
    : core_(core), options_(std::move(options)), responses_(options_.response_store) {}

HttpGateway::~HttpGateway() { Stop(); }

Status HttpGateway::Start() {
  if (server_ != nullptr) return FailedPreconditionError("the HTTP gateway is already started");
  const std::string& cert = options_.tls_cert_file;
  const std::string& key = options_.tls_key_file;
  if (cert.empty() != key.empty()) {
    std::string message = "TLS needs both a certificate file and a private key file; only the ";
    message += cert.empty() ? "key" : "certificate";
    message += " was given";
    return InvalidArgumentError(std::move(message));
  }
  std::signal(SIGPIPE, SIG_IGN);
  if (cert.empty()) {
    server_ = std::make_unique<httplib::Server>();
  } else {
    const std::string& client_ca = options_.tls_client_ca_file;
    server_ = std::make_unique<httplib::SSLServer>(cert.c_str(), key.c_str(),
                                                   client_ca.empty() ? nullptr : client_ca.c_str());
    if (!server_->is_valid()) {
      server_.reset();
      std::string message = "cannot load the TLS certificate \"";
      message += cert;
      message += "\" with the key \"";
      message += key;
      message += "\": both must be readable PEM files, and the key must match the certificate";
      return InvalidArgumentError(std::move(message));
    }
  }
  size_t num_threads = static_cast<size_t>(std::max(1, options_.num_threads));
  server_->new_task_queue = [num_threads] { return new httplib::ThreadPool(num_threads); };
  server_->set_payload_max_length(options_.max_body_bytes);
  // cpp-httplib's default sets SO_REUSEPORT, which would let a second router
  // bind the same port and silently take half its connections. SO_REUSEADDR
  // alone still allows a quick restart over connections in TIME_WAIT.
  server_->set_socket_options([this](auto sock) {
    int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    listen_fd_ = sock;  // the last socket tried is the one bound
  });
  RegisterRoutes();

  if (options_.port == 0) {
    port_ = server_->bind_to_any_port(options_.host);
  } else {
    port_ = server_->bind_to_port(options_.host, options_.port) ? options_.port : -1;
  }
  if (port_ < 0) {
    server_.reset();
    port_ = 0;
    std::string message = "cannot listen on ";
    message += options_.host;
    message += ':';
    message += std::to_string(options_.port);
    message += ": the address is in use, not local, or needs privileges";
    return UnavailableError(std::move(message));
  }
  // Debian's compiled cpp-httplib listens with a backlog of 5: a burst of
  // new connections (a thousand streaming clients, one connection per
  // request) overflows it and the kernel drops or resets them before any
  // thread sees them. Listening again on the bound socket raises the backlog
  // (to the kernel's cap, net.core.somaxconn).
  if (listen_fd_ >= 0 && ::listen(listen_fd_, kListenBacklog) != 0) {
    Log(LogLevel::kWarning, "gateway",
        std::string("cannot raise the listen backlog: ") + std::strerror(errno));
  }
  listen_ended_.store(false);
  serve_thread_ = std::thread([this] {
    server_->listen_after_bind();
    listen_ended_.store(true);
  });
  // cpp-httplib 0.11 has no "ready" signal: wait until it runs or gives up.
  while (!server_->is_running() && !listen_ended_.load()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!server_->is_running()) {
    serve_thread_.join();
    server_.reset();
    port_ = 0;
    return UnavailableError("the HTTP server bound its port but could not serve on it");
  }
  std::string message = tls() ? "serving HTTPS on " : "serving HTTP on ";
  message += options_.host;
  message += ':';
  message += std::to_string(port_);
  Log(LogLevel::kInfo, "gateway", message);
  return Status::Ok();
}

void HttpGateway::Stop() {
  if (server_ == nullptr) return;
  server_->stop();
  if (serve_thread_.joinable()) serve_thread_.join();
  server_.reset();
}

void HttpGateway::RegisterRoutes() {
  httplib::Server& server = *server_;
  server.Post("/v1/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleCompletions(req, res);
  });
  server.Post("/v1/chat/completions", [this](const httplib::Request& req, httplib::Response& res) {
    HandleChatCompletions(req, res);
  });
  server.Post("/v1/messages", [this](const httplib::Request& req, httplib::Response& res) {
    HandleMessages(req, res);
  });
  server.Post(
      "/v1/messages/count_tokens",
      [this](const httplib::Request& req, httplib::Response& res) { HandleCountTokens(req, res); });
  server.Post("/v1/responses", [this](const httplib::Request& req, httplib::Response& res) {
    HandleResponses(req, res);
  });
  server.Get(
      R"(/v1/responses/([^/]+))",
      [this](const httplib::Request& req, httplib::Response& res) { HandleGetResponse(req, res); });
  server.Get("/v1/models", [this](const httplib::Request& req, httplib::Response& res) {
    HandleModels(req, res);
  });
  server.Get(R"(/v1/models/(.+))", [this](const httplib::Request& req, httplib::Response& res) {
    HandleModel(req, res);
  });
  server.Get("/status.json", [this](const httplib::Request& req, httplib::Response& res) {
    if (!options_.status_json) {
      SendError(res, FormatForPath(req.path), NotFoundError("this server has no status page"));
      return;
    }
    res.set_header("Cache-Control", "no-store");
    res.set_content(options_.status_json(), std::string(kJsonType));
  });
  server.Get("/status", [this](const httplib::Request& req, httplib::Response& res) {
    if (options_.status_html.empty()) {
      SendError(res, FormatForPath(req.path), NotFoundError("this server has no status page"));
      return;
    }
    // Everything is inline: nothing else may load.
    res.set_header("Content-Security-Policy",
                   "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                   "connect-src 'self'");
    res.set_content(options_.status_html, "text/html; charset=utf-8");
  });
  server.Get("/healthz", [this](const httplib::Request&, httplib::Response& res) {
    Status health = options_.health ? options_.health() : Status::Ok();
    res.status = health.ok() ? 200 : 503;
    res.set_content(health.ok() ? "ok\n" : health.message() + "\n", "text/plain");
  });
  server.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    if (!options_.metrics_text) {
      SendError(res, FormatForPath(req.path), NotFoundError("this server exports no metrics"));
      return;
    }
    res.set_content(options_.metrics_text(), "text/plain; version=0.0.4; charset=utf-8");
  });

  // cpp-httplib answers unknown routes (404) and oversized bodies (413) with
  // an empty body; give them one in the API's format.
  httplib::Server::HandlerWithResponse error_handler = [this](const httplib::Request& req,
                                                              httplib::Response& res) {
    if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
    std::string message;
    if (res.status == 404) {
      message = "no route for ";
      message += req.method;
      message += ' ';
      message += req.path;
    } else if (res.status == 413) {
      message = "the request body exceeds the limit of ";
      message += std::to_string(options_.max_body_bytes);
      message += " bytes";
    } else {
      message = "HTTP status ";
      message += std::to_string(res.status);
    }
    res.set_content(ToJsonText(ErrorBody(FormatForPath(req.path), res.status, message)),
                    std::string(kJsonType));
    return httplib::Server::HandlerResponse::Handled;
  };
  server.set_error_handler(std::move(error_handler));
  server.set_exception_handler([](const httplib::Request& req, httplib::Response& res,
                                  std::exception_ptr error) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    std::string message = req.method;
    message += ' ';
    message += req.path;
    message += " failed: ";
    message += what;
    Log(LogLevel::kError, "gateway", message);
    res.status = 500;
    res.set_content(
        ToJsonText(ErrorBody(FormatForPath(req.path), 500, "internal error in the HTTP gateway")),
        std::string(kJsonType));
  });
  if (options_.on_response) {
    server.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
      options_.on_response(RouteLabel(req.path), res.status);
    });
  }
}

bool HttpGateway::Authorize(const httplib::Request& req, httplib::Response& res,
                            ApiFormat format) const {
  if (options_.api_keys.empty()) return true;
  std::string x_api_key = req.get_header_value("x-api-key");
  std::string bearer = BearerToken(req);
  if (x_api_key.empty() && bearer.empty()) {
    SendError(res, format,
              UnauthenticatedError("missing API key: send \"Authorization: Bearer KEY\" or "
                                   "\"x-api-key: KEY\""));
    return false;
  }
  bool accepted = false;
  size_t which = 0;
  for (size_t i = 0; i < options_.api_keys.size(); ++i) {
    const std::string& key = options_.api_keys[i];
    // Check both headers against every key: no early exit on a match.
    const bool match = (!x_api_key.empty() && SecretsEqual(x_api_key, key)) |
                       (!bearer.empty() && SecretsEqual(bearer, key));
    accepted |= match;
    if (match) which = i;
  }
  if (!accepted) {
    SendError(res, format, UnauthenticatedError("invalid API key"));
    return false;
  }
  if (options_.rate_limiter) {
    if (const double wait = options_.rate_limiter->Acquire(which); wait > 0) {
      const int retry = static_cast<int>(std::ceil(wait));
      SendError(res, format,
                ResourceExhaustedError("rate limit reached (" + options_.rate_limiter->Describe() +
                                       "); retry in " + std::to_string(retry) + " s"));
      res.headers.erase("Retry-After");
      res.set_header("Retry-After", std::to_string(retry));
      return false;
    }
  }
  return true;
}

void HttpGateway::SendError(httplib::Response& res, ApiFormat format, const Status& status) const {
  int http_status = HttpStatusFor(status.code());
  res.status = http_status;
  if (http_status == 429) {
    res.set_header("Retry-After", std::to_string(options_.retry_after_seconds));
  }
  if (http_status == 401) res.set_header("WWW-Authenticate", "Bearer");
  res.set_content(ToJsonText(ErrorBody(format, http_status, status.message())),
                  std::string(kJsonType));
}

void HttpGateway::ServeWhole(httplib::Response& res, ApiFormat format, const CoreCall& call,
                             const ResponseBuilder& build) const {
  GenerationResult result;
  Status status = call([&result](const v1::GenerateTextResponse& message) {
    result.Add(message);
    return true;
  });
  SetWorkerHeader(res, result.worker);
  if (!status.ok()) {
    SendError(res, format, status);
    return;
  }
  res.status = 200;
  res.set_content(build(result), std::string(kJsonType));
}

void HttpGateway::ServeStream(httplib::Response& res, ApiFormat format, CoreCall call,
                              std::unique_ptr<StreamEncoder> encoder) const {
  auto stream = std::make_shared<GenerationStream>(std::move(call));
  // Hold the response until the first message, so a request that fails
  // before producing anything (bad input, overload) still gets its own HTTP
  // status; but no longer than one keep-alive interval, and only until a
  // worker reports a prefill chunk done: past admission, a long prefill
  // streams keep-alives (Anthropic's pings), whose writes notice a client
  // that left, and a later failure is an error event.
  GenerationStream::Batch first;
  const auto give_up = std::chrono::steady_clock::now() + options_.keepalive_interval;
  while (first.messages.empty() && first.progress == 0 && !first.finished &&
         std::chrono::steady_clock::now() < give_up) {
    first = stream->Next(
        std::min<std::chrono::milliseconds>(std::chrono::seconds(1), options_.keepalive_interval));
  }
  if (first.messages.empty() && !first.status.ok()) {
    SendError(res, format, first.status);
    return;
  }
  if (!first.messages.empty()) {
    SetWorkerHeader(res, first.messages.front().worker());
  } else if (!first.progress_worker.empty()) {
    SetWorkerHeader(res, first.progress_worker);
  }
  res.set_header("Cache-Control", "no-cache");
  auto writer = std::make_shared<SseStreamWriter>(stream, std::move(encoder), std::move(first),
                                                  options_.keepalive_interval);
  res.set_chunked_content_provider(
      "text/event-stream",
      [writer](size_t /*offset*/, httplib::DataSink& sink) {
        SseStreamWriter::Step step = writer->WriteNext(
            [&sink](std::string_view text) { return sink.write(text.data(), text.size()); });
        if (step == SseStreamWriter::Step::kClientGone) return false;
        if (step == SseStreamWriter::Step::kDone) sink.done();
        return true;
      },
      // Also reached when the connection ends before the stream does.
      [writer](bool success) {
        if (!success) writer->Cancel();
      });
}

std::string HttpGateway::ModelName(const std::string& requested) const {
  if (!requested.empty()) return requested;
  StatusOr<v1::ListModelsResponse> models = core_.ListModels();
  if (!models.ok()) return "";
  std::string only;
  int served = 0;
  for (const v1::ModelInfo& m : models->models()) {
    if (!m.alias_of().empty()) continue;
    only = m.name();
    ++served;
  }
  return served == 1 ? only : "";
}

void HttpGateway::HandleCompletions(const httplib::Request& req, httplib::Response& res) {
  constexpr ApiFormat kFormat = ApiFormat::kOpenAi;
  if (!Authorize(req, res, kFormat)) return;
  StatusOr<nlohmann::json> body = ParseJsonObject(req.body);
  if (!body.ok()) return SendError(res, kFormat, body.status());
  StatusOr<OpenAiCompletionRequest> parsed = ParseOpenAiCompletionRequest(*body);
  if (!parsed.ok()) return SendError(res, kFormat, parsed.status());

  std::string request_id = NewRequestId();
  res.set_header(std::string(kRequestIdHeader), request_id);
  auto request = std::make_shared<v1::GenerateTextRequest>(std::move(parsed->request));
  request->set_request_id(request_id);
  ResponseMeta meta{"cmpl-" + request_id, UnixSeconds(), ModelName(request->model())};
  CoreCall call = [this, request](const MessageCallback& on_message) {
    return core_.Generate(*request, on_message);
  };
  const CompletionShape& shape = parsed->shape;
  if (parsed->stream.stream) {
    OpenAiStreamEncoder::Shape stream_shape{shape.n, shape.logprobs >= 0, shape.echo,
                                            shape.prompt_text};
    ServeStream(res, kFormat, std::move(call),
                std::make_unique<OpenAiStreamEncoder>(OpenAiStreamEncoder::Kind::kCompletion,
                                                      std::move(meta), parsed->stream.include_usage,
                                                      std::move(stream_shape)));
    return;
  }
  ServeWhole(res, kFormat, call, [&meta, &shape](const GenerationResult& result) {
    return ToJsonText(OpenAiCompletionJson(meta, result, shape));
  });
}

void HttpGateway::HandleChatCompletions(const httplib::Request& req, httplib::Response& res) {
  constexpr ApiFormat kFormat = ApiFormat::kOpenAi;
  if (!Authorize(req, res, kFormat)) return;
  StatusOr<nlohmann::json> body = ParseJsonObject(req.body);
  if (!body.ok()) return SendError(res, kFormat, body.status());
  StatusOr<OpenAiChatRequest> parsed = ParseOpenAiChatRequest(*body);
  if (!parsed.ok()) return SendError(res, kFormat, parsed.status());

  std::string request_id = NewRequestId();
  res.set_header(std::string(kRequestIdHeader), request_id);
  auto request = std::make_shared<v1::ChatRequest>(std::move(parsed->request));
  request->set_request_id(request_id);
  ResponseMeta meta{"chatcmpl-" + request_id, UnixSeconds(), ModelName(request->model())};
  CoreCall call = [this, request](const MessageCallback& on_message) {
    return core_.Chat(*request, on_message);
  };
  const bool logprobs = parsed->logprobs;
  if (parsed->stream.stream) {
    OpenAiStreamEncoder::Shape stream_shape;
    stream_shape.n = std::max<int>(1, static_cast<int>(request->options().n()));
    stream_shape.logprobs = logprobs;
    ServeStream(res, kFormat, std::move(call),
                std::make_unique<OpenAiStreamEncoder>(OpenAiStreamEncoder::Kind::kChat,
                                                      std::move(meta), parsed->stream.include_usage,
                                                      std::move(stream_shape)));
    return;
  }
  ServeWhole(res, kFormat, call, [&meta, logprobs](const GenerationResult& result) {
    return ToJsonText(OpenAiChatCompletionJson(meta, result, logprobs));
  });
}

void HttpGateway::HandleMessages(const httplib::Request& req, httplib::Response& res) {
  constexpr ApiFormat kFormat = ApiFormat::kAnthropic;
  if (!Authorize(req, res, kFormat)) return;
  StatusOr<nlohmann::json> body = ParseJsonObject(req.body);
  if (!body.ok()) return SendError(res, kFormat, body.status());
  StatusOr<AnthropicMessagesRequest> parsed =
      ParseAnthropicMessagesRequest(*body, AnthropicOptions());
  if (!parsed.ok()) return SendError(res, kFormat, parsed.status());

  std::string request_id = NewRequestId();
  res.set_header(std::string(kRequestIdHeader), request_id);
  auto request = std::make_shared<v1::ChatRequest>(std::move(parsed->request));
  request->set_request_id(request_id);
  // Claude Code names its session: a routing hint that keeps it on one worker.
  if (std::string session = req.get_header_value("X-Claude-Code-Session-Id"); !session.empty()) {
    request->mutable_options()->set_session_id(std::move(session));
  }
  ResponseMeta meta{"msg_" + request_id, UnixSeconds(), ModelName(request->model())};
  CoreCall call = [this, request](const MessageCallback& on_message) {
    return core_.Chat(*request, on_message);
  };
  if (parsed->stream) {
    ServeStream(res, kFormat, std::move(call),
                std::make_unique<AnthropicStreamEncoder>(std::move(meta)));
    return;
  }
  ServeWhole(res, kFormat, call, [&meta](const GenerationResult& result) {
    return ToJsonText(AnthropicMessageJson(meta, result));
  });
}

void HttpGateway::HandleResponses(const httplib::Request& req, httplib::Response& res) {
  constexpr ApiFormat kFormat = ApiFormat::kOpenAi;
  if (!Authorize(req, res, kFormat)) return;
  StatusOr<nlohmann::json> body = ParseJsonObject(req.body);
  if (!body.ok()) return SendError(res, kFormat, body.status());
  // Stored responses belong to the API key that made them.
  const std::string owner = KeyOwner(req);
  std::optional<ResponseStore::Entry> previous;
  if (const std::string previous_id = PreviousResponseId(*body); !previous_id.empty()) {
    previous = responses_.Get(previous_id, owner);
    if (!previous) {
      return SendError(res, kFormat,
                       NotFoundError("previous_response_id \"" + previous_id +
                                     "\" names no stored response (it was sent with store: "
                                     "false, expired, or was evicted; send the whole input)"));
    }
  }
  StatusOr<ResponsesRequest> parsed =
      ParseResponsesRequest(*body, previous ? &previous->conversation : nullptr);
  if (!parsed.ok()) return SendError(res, kFormat, parsed.status());

  std::string request_id = NewRequestId();
  res.set_header(std::string(kRequestIdHeader), request_id);
  auto request = std::make_shared<const ResponsesRequest>(std::move(parsed).value());
  auto chat = std::make_shared<v1::ChatRequest>(request->request);
  chat->set_request_id(request_id);
  ResponseMeta meta{"resp_" + request_id, UnixSeconds(), ModelName(chat->model())};
  CoreCall call = [this, chat](const MessageCallback& on_message) {
    return core_.Chat(*chat, on_message);
  };
  // What a later previous_response_id continues: the conversation so far
  // (without this request's instructions) and the answer.
  auto store = [this, request, previous, owner, id = meta.id](
                   const nlohmann::ordered_json& response, const GenerationResult& result) {
    if (!request->store) return;
    ResponseStore::Entry entry;
    if (previous) entry.conversation = previous->conversation;
    for (const v1::ChatMessage& m : request->new_messages) entry.conversation.push_back(m);
    entry.conversation.push_back(AssistantMessage(result));
    entry.response_json = ToJsonText(response);
    entry.owner = owner;
    responses_.Put(id, std::move(entry));
  };
  if (request->stream) {
    ServeStream(res, kFormat, std::move(call),
                std::make_unique<ResponsesStreamEncoder>(std::move(meta), request, store));
    return;
  }
  ServeWhole(res, kFormat, call, [&meta, &request, &store](const GenerationResult& result) {
    const v1::Usage usage = result.total_usage();
    const v1::FinishReason finish = result.finish_reason == v1::FINISH_REASON_UNSPECIFIED
                                        ? v1::FINISH_REASON_STOP
                                        : result.finish_reason;
    nlohmann::ordered_json response =
        ResponseJson(meta, *request, ResponsesOutputItems(meta.id, result), finish, &usage);
    store(response, result);
    return ToJsonText(response);
  });
}

void HttpGateway::HandleGetResponse(const httplib::Request& req, httplib::Response& res) {
  if (!Authorize(req, res, ApiFormat::kOpenAi)) return;
  const std::string id = req.matches[1];
  std::optional<ResponseStore::Entry> entry = responses_.Get(id, KeyOwner(req));
  if (!entry) {
    return SendError(res, ApiFormat::kOpenAi, NotFoundError("no stored response \"" + id + "\""));
  }
  res.set_content(entry->response_json, std::string(kJsonType));
}

AnthropicParseOptions HttpGateway::AnthropicOptions() const {
  AnthropicParseOptions o;
  o.volatile_prefixes = options_.volatile_prefixes;
  return o;
}

// Anthropic's token counting: the request a message would be (max_tokens
// not needed), rendered and tokenized as Chat would; {"input_tokens": N}.
void HttpGateway::HandleCountTokens(const httplib::Request& req, httplib::Response& res) {
  constexpr ApiFormat kFormat = ApiFormat::kAnthropic;
  if (!Authorize(req, res, kFormat)) return;
  StatusOr<nlohmann::json> body = ParseJsonObject(req.body);
  if (!body.ok()) return SendError(res, kFormat, body.status());
  if (!body->contains("max_tokens")) (*body)["max_tokens"] = 1;
  StatusOr<AnthropicMessagesRequest> parsed =
      ParseAnthropicMessagesRequest(*body, AnthropicOptions());
  if (!parsed.ok()) return SendError(res, kFormat, parsed.status());
  StatusOr<int64_t> count = core_.CountChatTokens(parsed->request);
  if (!count.ok()) return SendError(res, kFormat, count.status());
  nlohmann::ordered_json out;
  out["input_tokens"] = *count;
  res.set_content(ToJsonText(out), std::string(kJsonType));
}

void HttpGateway::HandleModels(const httplib::Request& req, httplib::Response& res) {
  if (!Authorize(req, res, ApiFormat::kOpenAi)) return;
  StatusOr<v1::ListModelsResponse> models = core_.ListModels();
  if (!models.ok()) return SendError(res, ApiFormat::kOpenAi, models.status());
  res.set_content(ToJsonText(OpenAiModelsJson(*models)), std::string(kJsonType));
}

void HttpGateway::HandleModel(const httplib::Request& req, httplib::Response& res) {
  if (!Authorize(req, res, ApiFormat::kOpenAi)) return;
  StatusOr<v1::ListModelsResponse> models = core_.ListModels();
  if (!models.ok()) return SendError(res, ApiFormat::kOpenAi, models.status());
  std::string name = req.matches[1];
  for (const v1::ModelInfo& model : models->models()) {
    if (model.name() != name) continue;
    v1::ListModelsResponse one;
    *one.add_models() = model;
    res.set_content(ToJsonText(OpenAiModelsJson(one)["data"][0]), std::string(kJsonType));
    return;
  }
  std::string message = "unknown model \"";
  message += name;
  message += '"';
  SendError(res, ApiFormat::kOpenAi, NotFoundError(std::move(message)));
}

}  // namespace kvmesh::router::gateway
