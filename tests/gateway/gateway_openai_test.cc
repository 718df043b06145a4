// End to end: OpenAI requests through the HTTP gateway to a fake core.
#include <gtest/gtest.h>

#include "tests/gateway/gateway_fixture.h"
#include "tests/gateway/sse_reader.h"

namespace kvmesh::router::testing {
namespace {

using nlohmann::json;

TEST_F(GatewayTest, ChatCompletion) {
  httplib::Result result = Post("/v1/chat/completions", R"({
      "model": "tiny", "max_tokens": 16, "temperature": 0, "seed": 7, "stop": ["\n\n"],
      "messages": [{"role": "system", "content": "Be brief."},
                   {"role": "user", "content": "Say hello"}]})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(result->get_header_value("x-kvmesh-worker"), "worker-a");
  EXPECT_EQ(result->get_header_value("Content-Type"), "application/json");
  std::string request_id = result->get_header_value("x-request-id");
  ASSERT_EQ(request_id.size(), 24u);

  json body = Json(result);
  EXPECT_EQ(body["id"], "chatcmpl-" + request_id);
  EXPECT_EQ(body["object"], "chat.completion");
  EXPECT_EQ(body["model"], "tiny");
  EXPECT_EQ(body["choices"], json::parse(R"([{"index":0,"message":{"role":"assistant",
      "content":"Hello, world!"},"logprobs":null,"finish_reason":"stop"}])"));
  // 9 + 9 content bytes: prompt 18, half of it cached; 4 messages.
  EXPECT_EQ(body["usage"], json::parse(R"({"prompt_tokens":18,"completion_tokens":4,
      "total_tokens":22,"prompt_tokens_details":{"cached_tokens":9}})"));

  v1::ChatRequest seen = core_.last_chat();
  EXPECT_EQ(seen.request_id(), request_id);
  ASSERT_EQ(seen.messages_size(), 2);
  EXPECT_EQ(seen.messages(0).role(), "system");
  EXPECT_EQ(seen.messages(1).content(), "Say hello");
  EXPECT_EQ(seen.options().max_tokens(), 16);
  EXPECT_EQ(seen.options().sampling().temperature(), 0.0f);
  EXPECT_EQ(seen.options().sampling().seed(), 7u);
  ASSERT_EQ(seen.options().stop_size(), 1);
  EXPECT_EQ(seen.options().stop(0), "\n\n");
}

TEST_F(GatewayTest, ChatCompletionStream) {
  httplib::Result result = Post("/v1/chat/completions", R"({
      "model": "tiny", "stream": true, "stream_options": {"include_usage": true},
      "messages": [{"role": "user", "content": "Say hello"}]})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  EXPECT_EQ(result->get_header_value("Content-Type"), "text/event-stream");
  EXPECT_EQ(result->get_header_value("x-kvmesh-worker"), "worker-a");
  std::string id = "chatcmpl-" + result->get_header_value("x-request-id");

  std::vector<SseMessage> events = ParseSse(result->body);
  // role chunk, 4 content chunks, finish chunk, usage chunk, [DONE]
  ASSERT_EQ(events.size(), 8u) << result->body;
  EXPECT_EQ(events.back().data, "[DONE]");
  std::string content;
  for (size_t i = 0; i + 1 < events.size(); ++i) {
    json chunk = json::parse(events[i].data);
    EXPECT_EQ(chunk["id"], id);
    EXPECT_EQ(chunk["object"], "chat.completion.chunk");
    if (i + 2 < events.size()) {
      EXPECT_TRUE(chunk["usage"].is_null());
      content += chunk["choices"][0]["delta"].value("content", "");
    }
  }
  EXPECT_EQ(content, "Hello, world!");
  EXPECT_EQ(json::parse(events[0].data)["choices"][0]["delta"]["role"], "assistant");
  EXPECT_EQ(json::parse(events[5].data)["choices"][0]["finish_reason"], "stop");
  json usage_chunk = json::parse(events[6].data);
  EXPECT_EQ(usage_chunk["choices"], json::array());
  EXPECT_EQ(usage_chunk["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
}

TEST_F(GatewayTest, Completion) {
  httplib::Result result =
      Post("/v1/completions", R"({"model": "tiny", "prompt": "Once upon", "max_tokens": 2})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  json body = Json(result);
  EXPECT_EQ(body["object"], "text_completion");
  EXPECT_EQ(body["choices"][0]["text"], "Hello,");
  EXPECT_EQ(body["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(body["usage"], json::parse(R"({"prompt_tokens":9,"completion_tokens":2,
      "total_tokens":11,"prompt_tokens_details":{"cached_tokens":4}})"));
  EXPECT_EQ(core_.last_generate().prompt(), "Once upon");
}

TEST_F(GatewayTest, CompletionStreamWithTokenPrompt) {
  httplib::Result result =
      Post("/v1/completions", R"({"model": "tiny", "prompt": [1, 2, 3], "stream": true})");
  ASSERT_TRUE(result);
  ASSERT_EQ(result->status, 200) << result->body;
  std::vector<SseMessage> events = ParseSse(result->body);
  ASSERT_EQ(events.size(), 5u) << result->body;
  std::string text;
  for (size_t i = 0; i < 4; ++i) {
    json chunk = json::parse(events[i].data);
    EXPECT_EQ(chunk["object"], "text_completion");
    EXPECT_FALSE(chunk.contains("usage"));
    text += chunk["choices"][0]["text"].get<std::string>();
  }
  EXPECT_EQ(text, "Hello, world!");
  EXPECT_EQ(json::parse(events[3].data)["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(events[4].data, "[DONE]");
  EXPECT_EQ(core_.last_generate().prompt_tokens_size(), 3);
}

TEST_F(GatewayTest, XApiKeyAlsoWorksOnOpenAiRoutes) {
  httplib::Result result = PostWithXApiKey("/v1/completions", R"({"prompt": "x"})");
  ASSERT_TRUE(result);
  EXPECT_EQ(result->status, 200) << result->body;
  // No model named and the fake serves two: the gateway cannot name the one
  // the core chose, so "model" stays empty.
  EXPECT_EQ(Json(result)["model"], "");
}

}  // namespace
}  // namespace kvmesh::router::testing
