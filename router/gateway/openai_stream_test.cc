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

}  // namespace
}  // namespace kvmesh::router::gateway
