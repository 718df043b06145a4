#include "router/gateway/openai_stream.h"

#include <gtest/gtest.h>

namespace kvmesh::router::gateway {
namespace {

v1::GenerateTextResponse Message(const std::string& text) {
  v1::GenerateTextResponse message;
  message.set_text(text);
  message.set_worker("worker-a");
  return message;
}

v1::GenerateTextResponse LastMessage(const std::string& text, v1::FinishReason reason) {
  v1::GenerateTextResponse message = Message(text);
  message.set_finish_reason(reason);
  message.mutable_usage()->set_prompt_tokens(5);
  message.mutable_usage()->set_cached_tokens(2);
  message.mutable_usage()->set_completion_tokens(3);
  return message;
}

const ResponseMeta kChatMeta{"chatcmpl-1", 1700000000, "tiny"};
const ResponseMeta kCompletionMeta{"cmpl-1", 1700000000, "tiny"};

constexpr char kChatPrefix[] =
    R"({"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"tiny",)";

std::string ChatChunk(const std::string& choice_json, bool with_usage_null = false) {
  std::string out = "data: ";
  out += kChatPrefix;
  out += R"("choices":[)" + choice_json + "]";
  if (with_usage_null) out += R"(,"usage":null)";
  out += "}\n\n";
  return out;
}

TEST(OpenAiStreamTest, ChatChunks) {
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kChat, kChatMeta, false);
  EXPECT_EQ(encoder.Encode(Message("Hel")),
            ChatChunk(R"({"index":0,"delta":{"role":"assistant","content":""},)"
                      R"("logprobs":null,"finish_reason":null})") +
                ChatChunk(R"({"index":0,"delta":{"content":"Hel"},"logprobs":null,)"
                          R"("finish_reason":null})"));
  EXPECT_EQ(encoder.Encode(Message("")), "");
  EXPECT_EQ(encoder.Encode(LastMessage("lo", v1::FINISH_REASON_STOP)),
            ChatChunk(R"({"index":0,"delta":{"content":"lo"},"logprobs":null,)"
                      R"("finish_reason":null})") +
                ChatChunk(R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"stop"})"));
  EXPECT_EQ(encoder.Finish(Status::Ok()), "data: [DONE]\n\n");
}

TEST(OpenAiStreamTest, ChatReasoningAndToolCallDeltas) {
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kChat, kChatMeta, false);
  v1::GenerateTextResponse think;
  think.set_reasoning("Hmm");
  encoder.Encode(think);  // the role chunk, then the reasoning
  v1::GenerateTextResponse calls = LastMessage("", v1::FINISH_REASON_TOOL_CALLS);
  for (const char* id : {"call_a", "call_b"}) {
    v1::ToolCall* call = calls.add_tool_calls();
    call->set_id(id);
    call->set_name("f");
    call->set_arguments_json("{}");
  }
  EXPECT_EQ(
      encoder.Encode(calls),
      ChatChunk(R"({"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_a",)"
                R"("type":"function","function":{"name":"f","arguments":"{}"}}]},)"
                R"("logprobs":null,"finish_reason":null})") +
          ChatChunk(R"({"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b",)"
                    R"("type":"function","function":{"name":"f","arguments":"{}"}}]},)"
                    R"("logprobs":null,"finish_reason":null})") +
          ChatChunk(R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"tool_calls"})"));
  OpenAiStreamEncoder fresh(OpenAiStreamEncoder::Kind::kChat, kChatMeta, false);
  EXPECT_NE(fresh.Encode(think).find(R"("delta":{"reasoning_content":"Hmm"})"), std::string::npos);
}

TEST(OpenAiStreamTest, ChatUsageChunk) {
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kChat, kChatMeta, true);
  EXPECT_EQ(
      encoder.Encode(LastMessage("", v1::FINISH_REASON_LENGTH)),
      ChatChunk(R"({"index":0,"delta":{"role":"assistant","content":""},)"
                R"("logprobs":null,"finish_reason":null})",
                true) +
          ChatChunk(R"({"index":0,"delta":{},"logprobs":null,"finish_reason":"length"})", true));
  EXPECT_EQ(encoder.Finish(Status::Ok()),
            std::string("data: ") + kChatPrefix +
                R"("choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,)"
                R"("total_tokens":8,"prompt_tokens_details":{"cached_tokens":2}}})"
                "\n\ndata: [DONE]\n\n");
}

TEST(OpenAiStreamTest, CompletionChunks) {
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kCompletion, kCompletionMeta, false);
  constexpr char kPrefix[] =
      R"(data: {"id":"cmpl-1","object":"text_completion","created":1700000000,"model":"tiny",)";
  EXPECT_EQ(encoder.Encode(Message("Hel")),
            std::string(kPrefix) +
                R"("choices":[{"text":"Hel","index":0,"logprobs":null,"finish_reason":null}]})"
                "\n\n");
  EXPECT_EQ(encoder.Encode(LastMessage("lo", v1::FINISH_REASON_LENGTH)),
            std::string(kPrefix) +
                R"("choices":[{"text":"lo","index":0,"logprobs":null,"finish_reason":"length"}]})"
                "\n\n");
  EXPECT_EQ(encoder.Finish(Status::Ok()), "data: [DONE]\n\n");
}

TEST(OpenAiStreamTest, StreamWithoutFinishReasonEndsWithStop) {
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kCompletion, kCompletionMeta, false);
  encoder.Encode(Message("x"));
  EXPECT_EQ(encoder.Finish(Status::Ok()),
            R"(data: {"id":"cmpl-1","object":"text_completion","created":1700000000,)"
            R"("model":"tiny","choices":[{"text":"","index":0,"logprobs":null,)"
            R"("finish_reason":"stop"}]})"
            "\n\ndata: [DONE]\n\n");
}

TEST(OpenAiStreamTest, ErrorAfterStart) {
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kChat, kChatMeta, true);
  encoder.Encode(Message("Hel"));
  EXPECT_EQ(encoder.Finish(UnavailableError("worker w1 failed mid-stream")),
            R"(data: {"error":{"message":"worker w1 failed mid-stream","type":"server_error",)"
            R"("param":null,"code":"service_unavailable"}})"
            "\n\ndata: [DONE]\n\n");
}

// The JSON of every data line that holds an object.
std::vector<nlohmann::json> Chunks(const std::string& sse) {
  std::vector<nlohmann::json> out;
  size_t pos = 0;
  while ((pos = sse.find("data: {", pos)) != std::string::npos) {
    const size_t end = sse.find('\n', pos);
    out.push_back(nlohmann::json::parse(sse.substr(pos + 6, end - pos - 6)));
    pos = end;
  }
  return out;
}

TEST(OpenAiStreamTest, ChoicesStreamApartAndUsageAddsTheirCompletions) {
  OpenAiStreamEncoder::Shape shape;
  shape.n = 2;
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kCompletion, kCompletionMeta,
                              /*include_usage=*/true, shape);
  v1::GenerateTextResponse a = LastMessage("A", v1::FINISH_REASON_STOP);
  v1::GenerateTextResponse b = LastMessage("B", v1::FINISH_REASON_LENGTH);
  b.set_choice(1);
  b.mutable_usage()->set_completion_tokens(4);
  std::string sse = encoder.Encode(b);
  sse += encoder.Encode(a);
  sse += encoder.Finish(Status::Ok());
  const auto chunks = Chunks(sse);
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[0]["choices"][0]["index"], 1);
  EXPECT_EQ(chunks[0]["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(chunks[1]["choices"][0]["index"], 0);
  EXPECT_EQ(chunks[2]["usage"]["completion_tokens"], 7);
  EXPECT_EQ(chunks[2]["usage"]["prompt_tokens"], 5) << "the prompt once";
}

TEST(OpenAiStreamTest, EchoAndLogprobsOnCompletionChunks) {
  OpenAiStreamEncoder::Shape shape;
  shape.logprobs = true;
  shape.echo = true;
  shape.prompt_text = "Hi";
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kCompletion, kCompletionMeta, false,
                              shape);
  v1::GenerateTextResponse first = Message(" there");
  v1::TokenLogprob* p0 = first.add_prompt_logprobs();
  p0->set_text("Hi");
  v1::TokenLogprob* lp = first.add_logprobs();
  lp->set_text(" there");
  lp->set_logprob(-0.5f);
  std::string sse = encoder.Encode(first);
  v1::GenerateTextResponse last = LastMessage("!", v1::FINISH_REASON_STOP);
  v1::TokenLogprob* lp2 = last.add_logprobs();
  lp2->set_text("!");
  lp2->set_logprob(-1.0f);
  sse += encoder.Encode(last);
  const auto chunks = Chunks(sse);
  ASSERT_EQ(chunks.size(), 2u);
  EXPECT_EQ(chunks[0]["choices"][0]["text"], "Hi there");
  EXPECT_EQ(chunks[0]["choices"][0]["logprobs"]["tokens"], nlohmann::json({"Hi", " there"}));
  EXPECT_EQ(chunks[0]["choices"][0]["logprobs"]["token_logprobs"][0], nullptr);
  EXPECT_EQ(chunks[0]["choices"][0]["logprobs"]["text_offset"], nlohmann::json({0, 2}));
  EXPECT_EQ(chunks[1]["choices"][0]["logprobs"]["text_offset"], nlohmann::json({8}));
}

TEST(OpenAiStreamTest, ChatLogprobsRideOnTheChunkOfTheirTokens) {
  OpenAiStreamEncoder::Shape shape;
  shape.logprobs = true;
  OpenAiStreamEncoder encoder(OpenAiStreamEncoder::Kind::kChat, kChatMeta, false, shape);
  v1::GenerateTextResponse hidden;  // tokens the parser holds back (no text yet)
  v1::TokenLogprob* lp = hidden.add_logprobs();
  lp->set_text("<");
  lp->set_logprob(-0.25f);
  const auto chunks = Chunks(encoder.Encode(hidden));
  ASSERT_EQ(chunks.size(), 2u);  // the role chunk, then an empty delta with the logprobs
  EXPECT_TRUE(chunks[1]["choices"][0]["delta"].empty());
  EXPECT_EQ(chunks[1]["choices"][0]["logprobs"]["content"][0]["token"], "<");
  EXPECT_EQ(chunks[1]["choices"][0]["logprobs"]["content"][0]["bytes"], nlohmann::json({60}));
}

}  // namespace
}  // namespace kvmesh::router::gateway
