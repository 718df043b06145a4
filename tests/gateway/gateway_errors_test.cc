// End to end: authentication, request errors, core errors and cancellation,
// each in the error format of the API the client speaks.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/gateway/gateway_fixture.h"
#include "tests/gateway/sse_reader.h"

namespace kvmesh::router::testing {
namespace {

using nlohmann::json;

constexpr char kChatBody[] = R"({"model": "tiny", "messages": [{"role": "user", "content": "x"}]})";
constexpr char kMessagesBody[] =
    R"({"model": "tiny", "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]})";

TEST_F(GatewayTest, MissingKeyIs401InOpenAiFormat) {
  httplib::Result result = Post("/v1/chat/completions", kChatBody, /*key=*/"");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);
  EXPECT_EQ(result->get_header_value("WWW-Authenticate"), "Bearer");
  EXPECT_EQ(
      Json(result),
      json::parse(R"({"error":{"message":)"
                  R"("missing API key: send \"Authorization: Bearer KEY\" or \"x-api-key: KEY\"",)"
                  R"("type":"invalid_request_error","param":null,"code":"invalid_api_key"}})"));
}

TEST_F(GatewayTest, WrongKeyIs401InEachFormat) {
  httplib::Result result = Post("/v1/completions", R"({"prompt": "x"})", "wrong-key");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);
  EXPECT_EQ(Json(result)["error"]["message"], "invalid API key");

  result = PostWithXApiKey("/v1/messages", kMessagesBody, "test-ke");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);
  EXPECT_EQ(Json(result), json::parse(R"({"type":"error","error":{
      "type":"authentication_error","message":"invalid API key"}})"));

  result = client_->Get("/v1/models");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 401);
  // Probes and scrapers need no key.
  result = client_->Get("/healthz");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200);
}

TEST_F(GatewayTest, MalformedJsonIs400) {
  httplib::Result result = Post("/v1/chat/completions", R"({"model": "tiny",)");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(Json(result)["error"]["message"],
            "request body is not valid JSON: parse error at line 1, column 18: syntax error "
            "while parsing object key - unexpected end of input; expected string literal");

  result = PostWithXApiKey("/v1/messages", "[]");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(Json(result), json::parse(R"({"type":"error","error":{
      "type":"invalid_request_error","message":"request body must be a JSON object, got array"}})"));
}

TEST_F(GatewayTest, WrongFieldTypeIs400NamingTheField) {
  httplib::Result result =
      Post("/v1/chat/completions", R"({"messages": [{"role": "user", "content": 1}]})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(Json(result)["error"]["message"],
            "field \"messages[0].content\" must be a string or an array of content parts, got "
            "number");

  result = PostWithXApiKey("/v1/messages", R"({"model": "tiny", "max_tokens": "8",
      "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(Json(result)["error"]["message"],
            "field \"max_tokens\" must be an integer, got string");

  result =
      Post("/v1/chat/completions", R"({"n": 17, "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(Json(result)["error"]["message"], "field \"n\" must be between 1 and 16, got 17");
}

TEST_F(GatewayTest, TooManyMessagesOrToolsIs400NamingTheLimit) {
  json body = {{"messages", json::array()}};
  for (int i = 0; i < 10001; ++i) body["messages"].push_back({{"role", "user"}, {"content", "x"}});
  httplib::Result result = Post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(Json(result)["error"]["message"],
            "field \"messages\" has 10001 entries; at most 10000");

  json tools = json::array();
  for (int i = 0; i < 1025; ++i) {
    tools.push_back({{"name", "t" + std::to_string(i)}, {"input_schema", {{"type", "object"}}}});
  }
  json anthropic = {{"model", "tiny"},
                    {"max_tokens", 8},
                    {"tools", tools},
                    {"messages", {{{"role", "user"}, {"content", "x"}}}}};
  result = PostWithXApiKey("/v1/messages", anthropic.dump());
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 400);
  EXPECT_EQ(Json(result)["error"]["message"], "field \"tools\" has 1025 entries; at most 1024");
  // At the limits, fine.
  body["messages"].erase(body["messages"].begin());
  result = Post("/v1/chat/completions", body.dump());
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200) << result->body;
}

TEST_F(GatewayTest, UnknownModelIs404) {
  httplib::Result result = Post("/v1/chat/completions", R"({"model": "nope", "stream": true,
      "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 404);
  EXPECT_EQ(Json(result), json::parse(R"({"error":{"message":"unknown model \"nope\"",
      "type":"invalid_request_error","param":null,"code":"model_not_found"}})"));

  result = PostWithXApiKey("/v1/messages", R"({"model": "nope", "max_tokens": 8,
      "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 404);
  EXPECT_EQ(Json(result)["error"]["type"], "not_found_error");
}

TEST_F(GatewayTest, OverloadIs429WithRetryAfter) {
  for (bool stream : {false, true}) {
    std::string body = R"({"model": "overloaded", "stream": )";
    body += stream ? "true" : "false";
    body += R"(, "messages": [{"role": "user", "content": "x"}]})";
    httplib::Result result = Post("/v1/chat/completions", body);
    ASSERT_TRUE(result);
    EXPECT_EQ(result->status, 429) << "stream=" << stream;
    EXPECT_EQ(result->get_header_value("Retry-After"), "2");
    EXPECT_EQ(Json(result)["error"]["code"], "rate_limit_exceeded");
  }
  httplib::Result result = PostWithXApiKey("/v1/messages", R"({"model": "overloaded",
      "max_tokens": 8, "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 429);
  EXPECT_EQ(result->get_header_value("Retry-After"), "2");
  EXPECT_EQ(Json(result)["error"]["type"], "rate_limit_error");
}

TEST_F(GatewayTest, ErrorAfterStreamStartedEndsWithErrorEvent) {
  httplib::Result result = Post("/v1/chat/completions", R"({"model": "broken", "stream": true,
      "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  std::vector<SseMessage> events = ParseSse(result->body);
  ASSERT_EQ(events.size(), 4u) << result->body;  // role, "Hel", error, [DONE]
  EXPECT_EQ(json::parse(events[2].data), json::parse(R"({"error":{
      "message":"worker-a failed in the middle of the answer","type":"server_error",
      "param":null,"code":"service_unavailable"}})"));
  EXPECT_EQ(events[3].data, "[DONE]");

  result = PostWithXApiKey("/v1/messages", R"({"model": "broken", "max_tokens": 8,
      "stream": true, "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200);
  events = ParseSse(result->body);
  ASSERT_EQ(events.size(), 5u) << result->body;
  EXPECT_EQ(events[4].event, "error");
  EXPECT_EQ(json::parse(events[4].data), json::parse(R"({"type":"error","error":{
      "type":"overloaded_error","message":"worker-a failed in the middle of the answer"}})"));

  // Not streamed, the same failure is a plain 503.
  result = Post("/v1/chat/completions",
                R"({"model": "broken", "messages": [{"role": "user", "content": "x"}]})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 503);
  EXPECT_EQ(result->get_header_value("x-kvmesh-worker"), "worker-a");
}

// Opens a raw connection, starts a long stream, reads until the first event
// arrives and hangs up: the gateway must cancel the generation.
TEST_F(GatewayTest, ClientDisconnectCancelsTheStream) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(gateway_->port()));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  std::string body = R"({"model": "slow", "stream": true, "messages": [{"role": "user",
      "content": "x"}]})";
  std::string request = "POST /v1/chat/completions HTTP/1.1\r\nHost: localhost\r\n";
  request += "Authorization: Bearer test-key\r\nContent-Type: application/json\r\n";
  request += "Content-Length: ";
  request += std::to_string(body.size());
  request += "\r\n\r\n";
  request += body;
  ASSERT_EQ(send(fd, request.data(), request.size(), 0), static_cast<ssize_t>(request.size()));
  std::string received;
  char buffer[4096];
  while (received.find("tick") == std::string::npos) {
    ssize_t n = recv(fd, buffer, sizeof(buffer), 0);
    ASSERT_GT(n, 0) << received;
    received.append(buffer, static_cast<size_t>(n));
  }
  EXPECT_NE(received.find("HTTP/1.1 200 OK"), std::string::npos) << received;
  close(fd);
  // "slow" would run for 10 s; the cancellation must come long before.
  EXPECT_TRUE(core_.WaitForCancellations(1, std::chrono::seconds(3)));
}

}  // namespace
}  // namespace kvmesh::router::testing
