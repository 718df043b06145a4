// The Anthropic-compatible HTTP API (POST /v1/messages), as JSON ↔ proto
// translation. (Streaming events: anthropic_stream.h.)
//
// Accepted request fields: model; max_tokens (required); messages (role
// user, assistant or system; content a string or an array of blocks: text;
// in assistant messages tool_use, thinking and redacted_thinking; in user
// messages tool_result, whose string or text-block content becomes a "tool"
// message, prefixed "Error: " when is_error); system (a string or text
// blocks, volatile blocks dropped: AnthropicParseOptions); tools (custom
// tools with an input_schema; server tools without one are offered by name);
// tool_choice auto, none, any or tool (any and tool force a call by
// constrained decoding); cache_control on blocks and tools (retention);
// stop_sequences; temperature (0..1); top_p; top_k; stream; thinking,
// metadata, context_management, output_config and service_tier (accepted
// when well-formed, ignored). Image and document blocks get 400: ignoring
// them would change the answer.
//
// The answer's content is the router's split of the model's output: a
// thinking block (its <think> text; signature ""), a text block (present
// when there is text or nothing else), and one tool_use block per call, with
// stop_reason "tool_use" when it called a tool and ended its turn.
//
// Usage follows Anthropic's accounting, the three adding up to the prompt:
// cache_read_input_tokens are the prompt tokens served from the prefix
// cache, cache_creation_input_tokens those computed up to the last
// cache_control breakpoint (kept cached for its ttl), input_tokens the rest.
//
// stop_reason: "max_tokens" for LENGTH and CONTEXT, "tool_use" for
// TOOL_CALLS, "stop_sequence" when a stop string ended it (and
// stop_sequence names it), otherwise "end_turn".
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

// Content blocks: {"type":"thinking","thinking","signature":""},
// {"type":"text","text"}, {"type":"tool_use","id","name","input"} (input {}
// unless `with_input`: a stream sends it as input_json_delta).
nlohmann::ordered_json AnthropicThinkingBlock(std::string_view thinking);
nlohmann::ordered_json AnthropicTextBlock(std::string_view text);
nlohmann::ordered_json AnthropicToolUseBlock(const v1::ToolCall& call, bool with_input);

// The "message" object answering a non-streamed request.
nlohmann::ordered_json AnthropicMessageJson(const ResponseMeta& meta,
                                            const GenerationResult& result);

}  // namespace kvmesh::router::gateway
