// The Anthropic-compatible HTTP API (POST /v1/messages), as JSON ↔ proto
// translation. (Streaming events: anthropic_stream.h.)
//
// Accepted request fields: model; max_tokens (required); messages (role user
// or assistant, content a string or an array of {"type":"text"} blocks joined
// with "\n"); system (a string or text blocks); stop_sequences; temperature
// (0..1); top_p; top_k; stream; metadata (ignored). Tools, tool_use/image
// blocks and enabled extended thinking are rejected with 400: ignoring them
// would change the answer.
//
// Usage follows Anthropic's accounting: input_tokens counts the prompt tokens
// that were computed, cache_read_input_tokens those served from the prefix
// cache (their sum is the prompt), cache_creation_input_tokens is 0.
//
// stop_reason: "max_tokens" for LENGTH and CONTEXT, otherwise "end_turn".
// The core does not report which stop string ended a generation, so
// "stop_sequence" is never produced and stop_sequence is always null.
//
// Pure functions; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"
#include "kvmesh/v1/inference.pb.h"
#include "router/gateway/generation_result.h"

namespace kvmesh::router::gateway {

struct AnthropicMessagesRequest {
  v1::ChatRequest request;
  bool stream = false;
};

struct AnthropicParseOptions {
  // System blocks (or the leading lines of a string `system`) that start
  // with one of these change with every request (Claude Code's
  // "x-anthropic-billing-header: cc_version=…; cc_entrypoint=…;") and would
  // break the prompt's cached prefix: they are dropped. Empty: kept.
  std::vector<std::string> volatile_prefixes = {std::string(kDefaultVolatilePrefix)};
  static constexpr std::string_view kDefaultVolatilePrefix = "x-anthropic-billing-header:";
};

StatusOr<AnthropicMessagesRequest> ParseAnthropicMessagesRequest(
    const nlohmann::json& body, const AnthropicParseOptions& options = {});

std::string_view AnthropicStopReason(v1::FinishReason reason, std::string_view stop_sequence = {});
// The "stop_sequence" field: the matched stop string, or null.
nlohmann::ordered_json AnthropicStopSequence(std::string_view stop_sequence);

// {"input_tokens","cache_creation_input_tokens","cache_read_input_tokens",
//  "output_tokens"}
nlohmann::ordered_json AnthropicUsageJson(const v1::Usage& usage);

// The "message" object answering a non-streamed request.
nlohmann::ordered_json AnthropicMessageJson(const ResponseMeta& meta,
                                            const GenerationResult& result);

}  // namespace kvmesh::router::gateway
