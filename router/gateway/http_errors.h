// How the HTTP gateway reports errors: the HTTP status for each Status code
// and the error body in the format of the API the client speaks (OpenAI or
// Anthropic), so each official SDK raises its own typed error.
//
// Pure functions; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string_view>

#include "common/status.h"

namespace kvmesh::router::gateway {

enum class ApiFormat { kOpenAi, kAnthropic };

// INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE → 400; UNAUTHENTICATED
// → 401; PERMISSION_DENIED → 403; NOT_FOUND → 404; RESOURCE_EXHAUSTED → 429
// (sent with Retry-After); CANCELLED → 499 (nginx's "client closed request");
// UNAVAILABLE → 503; DEADLINE_EXCEEDED → 504; anything else → 500.
int HttpStatusFor(StatusCode code);

// {"error":{"message","type","param":null,"code"}}, with OpenAI's type and
// code for the HTTP status (400 invalid_request_error, 401 invalid_api_key,
// 404 model_not_found, 429 rate_limit_exceeded, 5xx server_error, …).
nlohmann::ordered_json OpenAiErrorBody(int http_status, std::string_view message);

// {"type":"error","error":{"type","message"}}, with Anthropic's error type for
// the HTTP status (invalid_request_error, authentication_error,
// permission_error, not_found_error, request_too_large, rate_limit_error,
// overloaded_error for 503, api_error otherwise).
nlohmann::ordered_json AnthropicErrorBody(int http_status, std::string_view message);

nlohmann::ordered_json ErrorBody(ApiFormat format, int http_status, std::string_view message);

// JSON text for a response body or an SSE data line: one line, UTF-8 kept as
// is, invalid UTF-8 replaced rather than throwing.
std::string ToJsonText(const nlohmann::ordered_json& value);

}  // namespace kvmesh::router::gateway
