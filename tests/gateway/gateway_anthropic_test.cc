// End to end: Anthropic Messages requests through the HTTP gateway.
#include <gtest/gtest.h>

#include "tests/gateway/gateway_fixture.h"
#include "tests/gateway/sse_reader.h"

namespace kvmesh::router::testing {
namespace {

using nlohmann::json;

TEST_F(GatewayTest, Message) {
  httplib::Result result = PostWithXApiKey("/v1/messages", R"({
      "model": "tiny", "max_tokens": 64, "system": "Be brief.",
      "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}],
      "stop_sequences": ["END"], "top_k": 3})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(result->get_header_value("x-kvmesh-worker"), "worker-a");
  json body = Json(result);
  EXPECT_EQ(body["id"], "msg_" + result->get_header_value("x-request-id"));
  EXPECT_EQ(body["type"], "message");
  EXPECT_EQ(body["role"], "assistant");
  EXPECT_EQ(body["content"], json::parse(R"([{"type":"text","text":"Hello, world!"}])"));
  EXPECT_EQ(body["stop_reason"], "end_turn");
  EXPECT_TRUE(body["stop_sequence"].is_null());
  // prompt 9 + 9 = 18 bytes, 9 cached: 9 computed.
  EXPECT_EQ(body["usage"], json::parse(R"({"input_tokens":9,"cache_creation_input_tokens":0,
      "cache_read_input_tokens":9,"output_tokens":4})"));

  v1::ChatRequest seen = core_.last_chat();
  ASSERT_EQ(seen.messages_size(), 2);
  EXPECT_EQ(seen.messages(0).role(), "system");
  EXPECT_EQ(seen.messages(0).content(), "Be brief.");
  EXPECT_EQ(seen.options().max_tokens(), 64);
  EXPECT_EQ(seen.options().sampling().top_k(), 3);
  EXPECT_EQ(seen.options().stop(0), "END");
}

TEST_F(GatewayTest, MessageWithBearerKeyAndMaxTokens) {
  // Anthropic's 1.x SDKs send the key as a bearer token.
  httplib::Result result = Post("/v1/messages", R"({
      "model": "tiny", "max_tokens": 3, "messages": [{"role": "user", "content": "hi"}]})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  json body = Json(result);
  EXPECT_EQ(body["content"][0]["text"], "Hello, world");
  EXPECT_EQ(body["stop_reason"], "max_tokens");
}

TEST_F(GatewayTest, MessageStream) {
  httplib::Result result = PostWithXApiKey("/v1/messages", R"({
      "model": "tiny", "max_tokens": 64, "stream": true,
      "messages": [{"role": "user", "content": "Say hello"}]})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_EQ(result->get_header_value("x-kvmesh-worker"), "worker-a");

  std::vector<SseMessage> events = ParseSse(result->body);
  std::vector<std::string> names;
  std::string text;
  for (const SseMessage& event : events) {
    names.push_back(event.event);
    json data = json::parse(event.data);
    EXPECT_EQ(data["type"], event.event);
    if (event.event == "content_block_delta") text += data["delta"]["text"].get<std::string>();
  }
  EXPECT_EQ(names, (std::vector<std::string>{
                       "message_start", "ping", "content_block_start", "content_block_delta",
                       "content_block_delta", "content_block_delta", "content_block_delta",
                       "content_block_stop", "message_delta", "message_stop"}));
  EXPECT_EQ(text, "Hello, world!");
  json start = json::parse(events[0].data);
  EXPECT_EQ(start["message"]["id"], "msg_" + result->get_header_value("x-request-id"));
  EXPECT_EQ(start["message"]["model"], "tiny");
  json delta = json::parse(events[8].data);
  EXPECT_EQ(delta["delta"]["stop_reason"], "end_turn");
  EXPECT_EQ(delta["usage"], json::parse(R"({"input_tokens":5,"cache_creation_input_tokens":0,
      "cache_read_input_tokens":4,"output_tokens":4})"));
}

}  // namespace
}  // namespace kvmesh::router::testing
