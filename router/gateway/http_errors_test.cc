#include "router/gateway/http_errors.h"

#include <gtest/gtest.h>

namespace kvmesh::router::gateway {
namespace {

TEST(HttpErrorsTest, StatusMapping) {
  EXPECT_EQ(HttpStatusFor(StatusCode::kOk), 200);
  EXPECT_EQ(HttpStatusFor(StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kFailedPrecondition), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kOutOfRange), 400);
  EXPECT_EQ(HttpStatusFor(StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(HttpStatusFor(StatusCode::kPermissionDenied), 403);
  EXPECT_EQ(HttpStatusFor(StatusCode::kNotFound), 404);
  EXPECT_EQ(HttpStatusFor(StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(HttpStatusFor(StatusCode::kCancelled), 499);
  EXPECT_EQ(HttpStatusFor(StatusCode::kUnavailable), 503);
  EXPECT_EQ(HttpStatusFor(StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(HttpStatusFor(StatusCode::kInternal), 500);
  EXPECT_EQ(HttpStatusFor(StatusCode::kDataLoss), 500);
}

TEST(HttpErrorsTest, OpenAiBodies) {
  EXPECT_EQ(ToJsonText(OpenAiErrorBody(400, "field \"n\" must be 1")),
            R"({"error":{"message":"field \"n\" must be 1","type":"invalid_request_error",)"
            R"("param":null,"code":null}})");
  EXPECT_EQ(ToJsonText(OpenAiErrorBody(401, "invalid API key")),
            R"({"error":{"message":"invalid API key","type":"invalid_request_error",)"
            R"("param":null,"code":"invalid_api_key"}})");
  EXPECT_EQ(ToJsonText(OpenAiErrorBody(429, "overloaded")),
            R"({"error":{"message":"overloaded","type":"rate_limit_error","param":null,)"
            R"("code":"rate_limit_exceeded"}})");
  EXPECT_EQ(ToJsonText(OpenAiErrorBody(500, "boom")),
            R"({"error":{"message":"boom","type":"server_error","param":null,)"
            R"("code":"internal_error"}})");
}

TEST(HttpErrorsTest, AnthropicBodies) {
  EXPECT_EQ(ToJsonText(AnthropicErrorBody(401, "invalid API key")),
            R"({"type":"error","error":{"type":"authentication_error",)"
            R"("message":"invalid API key"}})");
  EXPECT_EQ(ToJsonText(AnthropicErrorBody(404, "unknown model")),
            R"({"type":"error","error":{"type":"not_found_error","message":"unknown model"}})");
  EXPECT_EQ(ToJsonText(AnthropicErrorBody(429, "x")),
            R"({"type":"error","error":{"type":"rate_limit_error","message":"x"}})");
  EXPECT_EQ(ToJsonText(AnthropicErrorBody(503, "x")),
            R"({"type":"error","error":{"type":"overloaded_error","message":"x"}})");
  EXPECT_EQ(ToJsonText(AnthropicErrorBody(422, "x")),
            R"({"type":"error","error":{"type":"invalid_request_error","message":"x"}})");
  EXPECT_EQ(ToJsonText(AnthropicErrorBody(504, "x")),
            R"({"type":"error","error":{"type":"api_error","message":"x"}})");
}

TEST(HttpErrorsTest, JsonTextKeepsUtf8AndReplacesInvalidBytes) {
  nlohmann::ordered_json value = {{"text", "caf\xc3\xa9 \xff"}};
  EXPECT_EQ(ToJsonText(value), "{\"text\":\"caf\xc3\xa9 \xef\xbf\xbd\"}");
}

}  // namespace
}  // namespace kvmesh::router::gateway
