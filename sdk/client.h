// kvmesh::Client: the C++ client library for a kvmesh router's Inference API.
//
//   kvmesh::ClientOptions options;
//   options.address = "127.0.0.1:50050";
//   auto client = kvmesh::Client::Connect(options);
//   kvmesh::GenerateParams params;
//   params.max_tokens = 64;
//   auto done = (*client)->Generate("Once upon a time", params,
//                                   [](std::string_view text) { std::cout << text; return true; });
//
// Streaming callbacks receive text as it is generated (UTF-8 safe pieces);
// returning false cancels the request. Each call has a deadline (per call, or
// the client's default). A call that fails before any text arrived with
// UNAVAILABLE or RESOURCE_EXHAUSTED is retried with exponential backoff, up
// to max_retries times; once text has been delivered it is never retried.
// A Client is thread-safe and meant to be shared.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kvmesh {

struct ClientOptions {
  std::string address;  // HOST:PORT of a kvmesh-router
  std::string api_key;  // sent as "authorization: Bearer KEY"
  bool tls = false;
  std::string tls_root_certs;  // PEM; empty: the system's roots
  // PEM certificate chain and key shown to a router that asks for one
  // (its tls_client_ca: mutual TLS).
  std::string tls_cert_chain;
  std::string tls_private_key;
  std::chrono::milliseconds default_timeout{std::chrono::minutes(10)};
  int max_retries = 2;
  std::chrono::milliseconds retry_backoff{200};
};

struct GenerateParams {
  std::string model;                  // empty: the router's only model
  std::optional<int32_t> max_tokens;  // unset: the router's default; 0: the prompt only
  std::optional<float> temperature;   // unset: 1.0; 0 = greedy
  std::optional<float> top_p;
  std::optional<int32_t> top_k;
  std::optional<float> min_p;
  std::optional<float> repetition_penalty;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::string cache_salt;
  // Constrained decoding: a GBNF grammar or a JSON Schema (text) the output
  // must match; at most one.
  std::string grammar;
  std::string json_schema;
  // Log-probabilities of the generated tokens (with the top_logprobs, at
  // most 20, most likely alternatives) and of the prompt's tokens.
  bool logprobs = false;
  int32_t top_logprobs = 0;
  bool prompt_logprobs = false;
  std::optional<std::chrono::milliseconds> timeout;  // unset: the client's default
};

struct ChatTurn {
  std::string role;  // "system", "user", "assistant"
  std::string content;
};

// A token's log-probability under the model (log-softmax of its raw logits,
// before sampling changes them), and the likeliest tokens at its position.
struct TokenLogprob {
  int32_t token = 0;
  std::string text;               // the token's bytes
  std::optional<float> logprob;   // unset for a prompt's first token
  std::vector<TokenLogprob> top;  // most likely first
};

struct Completion {
  std::string text;
  std::vector<int32_t> tokens;
  std::string finish_reason;  // "length", "stop", "context", "cancelled"
  uint32_t prompt_tokens = 0;
  uint32_t cached_tokens = 0;
  uint32_t completion_tokens = 0;
  double ttft_ms = 0;
  std::string worker;
  std::string request_id;
  std::vector<TokenLogprob> logprobs;         // one per generated token
  std::vector<TokenLogprob> prompt_logprobs;  // one per prompt token
};

struct ModelEntry {
  std::string name;
  uint32_t context_length = 0;
  uint32_t workers = 0;
};

// Called with each new piece of text; return false to cancel.
using TextCallback = std::function<bool(std::string_view text)>;

class Client {
 public:
  static StatusOr<std::unique_ptr<Client>> Connect(const ClientOptions& options);
  ~Client();

  StatusOr<Completion> Generate(const std::string& prompt, const GenerateParams& params,
                                const TextCallback& on_text = nullptr);
  StatusOr<Completion> Chat(const std::vector<ChatTurn>& messages, const GenerateParams& params,
                            const TextCallback& on_text = nullptr);
  StatusOr<std::vector<ModelEntry>> ListModels();
  StatusOr<std::vector<int32_t>> Tokenize(const std::string& model, const std::string& text,
                                          bool add_special = true);

 private:
  class Impl;
  explicit Client(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvmesh
