// The OpenAI-compatible HTTP API, as JSON ↔ proto translation: requests of
// POST /v1/completions and /v1/chat/completions become GenerateTextRequest and
// ChatRequest, and finished generations become OpenAI's response objects.
// (Streaming chunks: openai_stream.h.)
//
// Accepted request fields (unknown fields are ignored, as OpenAI's SDKs send
// ones kvmesh has no use for):
//   model; prompt (string, array of token ids, or a one-element array of
//   either) | messages (role system/developer/user/assistant/tool; content a
//   string, null, or an array of {"type":"text"} parts, joined with "\n";
//   assistant tool_calls and reasoning_content; tool tool_call_id and name);
//   tools (type "function") and tool_choice none/auto/required/named (a
//   forced call: ChatRequest.tool_choice); response_format text,
//   json_object or json_schema, and the extensions grammar (GBNF) and
//   json_schema (constrained decoding); parallel_tool_calls
//   (accepted, ignored: a model calls as many tools as it writes); max_tokens (chat:
//   max_completion_tokens wins); temperature; top_p; top_k, min_p,
//   repetition_penalty (extensions); seed; stop (string or array);
//   presence_penalty; frequency_penalty; stream; stream_options.include_usage;
//   n (1 … 16 choices from one prefill); user; cache_salt and ignore_eos
//   (extensions); logit_bias ({"token id": -100..100}); logprobs (chat: a
//   boolean, with top_logprobs 0 … 20; completions: the number of
//   alternatives, 0 … 20); completions: echo (the prompt, and with logprobs
//   its tokens' logprobs, before the completion; max_tokens 0 scores the
//   prompt only) and best_of (n … 16 generated, the n with the highest mean
//   logprob returned; not with stream).
// Features that would change the answer if ignored are rejected with 400:
// suffix, tools on /v1/completions; on chat functions/function_call
// (legacy), audio, non-text modalities and web_search_options; and a schema
// or grammar outside the supported subset (the message names the keyword).
// prompt_cache_key is a session-affinity hint (GenerationOptions.session_id). docs/api.md has the
// table of every field.
//
// A chat answer carries the router's split of the model's output: content
// (null when the model only called tools), reasoning_content (the text it
// wrote between <think> and </think>) and tool_calls, with finish_reason
// "tool_calls" when it called a tool and ended its turn.
//
// Pure functions; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"
#include "kvmesh/v1/inference.pb.h"
#include "router/gateway/generation_result.h"

namespace kvmesh::router::gateway {

struct StreamOptions {
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// How a completion response is shaped beyond what the core returns.
struct CompletionShape {
  bool echo = false;
  std::string prompt_text;  // echo of a text prompt (token prompts use the logprob tokens)
  int logprobs = -1;        // alternatives per token; -1: no logprobs
  int n = 1;                // choices returned
  int best_of = 1;          // choices generated (>= n); the best n are returned
};

struct OpenAiCompletionRequest {
  v1::GenerateTextRequest request;
  StreamOptions stream;
  CompletionShape shape;
};

struct OpenAiChatRequest {
  v1::ChatRequest request;
  StreamOptions stream;
  bool logprobs = false;
};

StatusOr<OpenAiCompletionRequest> ParseOpenAiCompletionRequest(const nlohmann::json& body);

// An output format object ({"type": text | json_object | json_schema}) into
// `options`: json_object constrains to any JSON object, json_schema to its
// "schema" (checked against the supported subset), read from the object
// itself or, with `schema_nested`, from its "json_schema" member (chat's
// response_format; the Responses API's text.format is flat). `path` names
// the object in errors.
Status ApplyOutputFormat(const nlohmann::json& format, const std::string& path, bool schema_nested,
                         v1::GenerationOptions* options);
StatusOr<OpenAiChatRequest> ParseOpenAiChatRequest(const nlohmann::json& body);

// "stop" for STOP (and for a stream that ended without a reason), "length"
// for LENGTH and CONTEXT, "cancelled" for CANCELLED, "tool_calls" for
// TOOL_CALLS.
std::string_view OpenAiFinishReason(v1::FinishReason reason);

// {"prompt_tokens","completion_tokens","total_tokens",
//  "prompt_tokens_details":{"cached_tokens"}}
nlohmann::ordered_json OpenAiUsageJson(const v1::Usage& usage);

// The "text_completion" object for POST /v1/completions.
nlohmann::ordered_json OpenAiCompletionJson(const ResponseMeta& meta,
                                            const GenerationResult& result,
                                            const CompletionShape& shape = {});

// {"id","type":"function","function":{"name","arguments"}}, the arguments
// as a JSON string.
nlohmann::ordered_json OpenAiToolCallJson(const v1::ToolCall& call);

// The "chat.completion" object for POST /v1/chat/completions.
nlohmann::ordered_json OpenAiChatCompletionJson(const ResponseMeta& meta,
                                                const GenerationResult& result,
                                                bool logprobs = false);

// The list for GET /v1/models: {"object":"list","data":[{"id","object":"model",
// "created":0,"owned_by":"kvmesh","context_length","workers"}]}, the last two
// being kvmesh extensions.
nlohmann::ordered_json OpenAiModelsJson(const v1::ListModelsResponse& models);

}  // namespace kvmesh::router::gateway
