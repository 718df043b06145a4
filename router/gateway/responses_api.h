// OpenAI's Responses API (POST /v1/responses), as JSON ↔ proto translation:
// a request becomes a ChatRequest (rendered with the model's chat template
// like /v1/chat/completions), and a finished generation becomes a "response"
// object whose `output` holds reasoning, message and function_call items.
// (Streaming events: responses_stream.h; stored responses: response_store.h.)
//
// Request fields taken:
//   model; input (a string: one user message, or an array of items:
//   messages {role system/developer/user/assistant, content a string or
//   input_text/output_text parts}, function_call {call_id, name, arguments},
//   function_call_output {call_id, output}, reasoning {content or
//   encrypted_content}); instructions (a system message first);
//   previous_response_id (the stored conversation before `input`); tools
//   (type function: {name, description, parameters}); tool_choice
//   none/auto/required/{type: function, name}; text.format (text,
//   json_object, json_schema {schema}); max_output_tokens; temperature;
//   top_p; stream; store (default true); prompt_cache_key (session affinity);
//   reasoning, include, parallel_tool_calls, metadata, client_metadata,
//   user, safety_identifier, service_tier, truncation (accepted; they
//   change nothing here).
// Tools a local model cannot run (web_search, file_search, computer use,
// code_interpreter, image_generation, mcp, local_shell, custom) and
// namespace tools are accepted and not offered to the model; the response
// lists them as sent. Rejected with 400: background, conversation, prompt
// (templates), input items that are not text (images, files, audio),
// item_reference, and unknown input item types (the message names the item).
//
// Pure functions; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/status.h"
#include "kvmesh/v1/inference.pb.h"
#include "router/gateway/generation_result.h"

namespace kvmesh::router::gateway {

struct ResponsesRequest {
  v1::ChatRequest request;  // the whole conversation, previous response included
  bool stream = false;
  bool store = true;
  std::string previous_response_id;
  // The conversation as far as this request adds to it (after a previous
  // response's): stored with the response for a later previous_response_id.
  std::vector<v1::ChatMessage> new_messages;
  // Echoed in the response object as the request gave them.
  nlohmann::ordered_json echo;
};

// `previous`: the stored conversation of previous_response_id (the caller
// looks it up; see ResponseStore). Call with nullptr when there is none.
StatusOr<ResponsesRequest> ParseResponsesRequest(const nlohmann::json& body,
                                                 const std::vector<v1::ChatMessage>* previous);

// The previous_response_id of a request body ("" when none), read before
// parsing so the caller can fetch the stored conversation.
std::string PreviousResponseId(const nlohmann::json& body);

// The output items of one generation: reasoning (when the model reasoned),
// a message (when it wrote text, or called nothing), function calls.
// Item ids derive from `response_id`.
nlohmann::ordered_json ResponsesOutputItems(const std::string& response_id,
                                            const ChoiceResult& result);

// {"input_tokens", "input_tokens_details": {"cached_tokens"},
//  "output_tokens", "output_tokens_details": {"reasoning_tokens"},
//  "total_tokens"}
nlohmann::ordered_json ResponsesUsageJson(const v1::Usage& usage);

// The "response" object. `status` "completed", "incomplete" (max tokens:
// incomplete_details.reason "max_output_tokens") or "in_progress" (the
// stream's opening event, no output yet).
nlohmann::ordered_json ResponseJson(const ResponseMeta& meta, const ResponsesRequest& request,
                                    const nlohmann::ordered_json& output, v1::FinishReason finish,
                                    const v1::Usage* usage);

// A reasoning item's encrypted_content: "kvmesh-reasoning:" and the text in
// base64 (other servers' content is ignored on input). kvmesh does not
// encrypt it; it is there so stateless clients (store: false) can send the
// reasoning back, which the parser decodes.
std::string EncodeReasoning(std::string_view text);

// The assistant message a generation adds to the conversation (for the
// store): its text, reasoning and tool calls.
v1::ChatMessage AssistantMessage(const ChoiceResult& result);

}  // namespace kvmesh::router::gateway
