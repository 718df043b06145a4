#include "router/gateway/http_errors.h"

#include <string>

namespace kvmesh::router::gateway {
namespace {

struct OpenAiKind {
  std::string_view type;
  std::string_view code;  // empty: null
};

OpenAiKind OpenAiKindFor(int http_status) {
  switch (http_status) {
    case 400:
      return {"invalid_request_error", ""};
    case 401:
      return {"invalid_request_error", "invalid_api_key"};
    case 403:
      return {"invalid_request_error", "permission_denied"};
    case 404:
      return {"invalid_request_error", "model_not_found"};
    case 413:
      return {"invalid_request_error", "request_too_large"};
    case 429:
      return {"rate_limit_error", "rate_limit_exceeded"};
    case 499:
      return {"invalid_request_error", "cancelled"};
    case 503:
      return {"server_error", "service_unavailable"};
    case 504:
      return {"server_error", "timeout"};
    default:
      return http_status < 500 ? OpenAiKind{"invalid_request_error", ""}
                               : OpenAiKind{"server_error", "internal_error"};
  }
}

std::string_view AnthropicTypeFor(int http_status) {
  switch (http_status) {
    case 401:
      return "authentication_error";
    case 403:
      return "permission_error";
    case 404:
      return "not_found_error";
    case 413:
      return "request_too_large";
    case 429:
      return "rate_limit_error";
    case 503:
      return "overloaded_error";
    default:
      // Anthropic uses invalid_request_error for every 4xx it does not name.
      return http_status < 500 ? "invalid_request_error" : "api_error";
  }
}

}  // namespace

int HttpStatusFor(StatusCode code) {
  switch (code) {
    case StatusCode::kOk:
      return 200;
    case StatusCode::kInvalidArgument:
    case StatusCode::kFailedPrecondition:
    case StatusCode::kOutOfRange:
      return 400;
    case StatusCode::kUnauthenticated:
      return 401;
    case StatusCode::kPermissionDenied:
      return 403;
    case StatusCode::kNotFound:
      return 404;
    case StatusCode::kResourceExhausted:
      return 429;
    case StatusCode::kCancelled:
      return 499;
    case StatusCode::kUnavailable:
      return 503;
    case StatusCode::kDeadlineExceeded:
      return 504;
    default:
      return 500;
  }
}

nlohmann::ordered_json OpenAiErrorBody(int http_status, std::string_view message) {
  OpenAiKind kind = OpenAiKindFor(http_status);
  nlohmann::ordered_json error;
  error["message"] = message;
  error["type"] = kind.type;
  error["param"] = nullptr;
  if (kind.code.empty()) {
    error["code"] = nullptr;
  } else {
    error["code"] = kind.code;
  }
  nlohmann::ordered_json body;
  body["error"] = std::move(error);
  return body;
}

nlohmann::ordered_json AnthropicErrorBody(int http_status, std::string_view message) {
  nlohmann::ordered_json error;
  error["type"] = AnthropicTypeFor(http_status);
  error["message"] = message;
  nlohmann::ordered_json body;
  body["type"] = "error";
  body["error"] = std::move(error);
  return body;
}

nlohmann::ordered_json ErrorBody(ApiFormat format, int http_status, std::string_view message) {
  return format == ApiFormat::kAnthropic ? AnthropicErrorBody(http_status, message)
                                         : OpenAiErrorBody(http_status, message);
}

std::string ToJsonText(const nlohmann::ordered_json& value) {
  return value.dump(-1, ' ', /*ensure_ascii=*/false, nlohmann::json::error_handler_t::replace);
}

}  // namespace kvmesh::router::gateway
