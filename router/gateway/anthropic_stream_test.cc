#include "router/gateway/anthropic_stream.h"

#include <gtest/gtest.h>

namespace kvmesh::router::gateway {
namespace {

v1::GenerateTextResponse Message(const std::string& text) {
  v1::GenerateTextResponse message;
  message.set_text(text);
  return message;
}

TEST(AnthropicStreamTest, EventSequence) {
  AnthropicStreamEncoder encoder(ResponseMeta{"msg_1", 1700000000, "tiny"});
  EXPECT_EQ(encoder.Encode(Message("Hel")),
            "event: message_start\n"
            R"(data: {"type":"message_start","message":{"id":"msg_1","type":"message",)"
            R"("role":"assistant","model":"tiny","content":[],"stop_reason":null,)"
            R"("stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,)"
            R"("cache_read_input_tokens":0,"output_tokens":0}}})"
            "\n\n"
            "event: ping\n"
            R"(data: {"type":"ping"})"
            "\n\n"
            "event: content_block_start\n"
            R"(data: {"type":"content_block_start","index":0,)"
            R"("content_block":{"type":"text","text":""}})"
            "\n\n"
            "event: content_block_delta\n"
            R"(data: {"type":"content_block_delta","index":0,)"
            R"("delta":{"type":"text_delta","text":"Hel"}})"
            "\n\n");
  v1::GenerateTextResponse last = Message("lo");
  last.set_finish_reason(v1::FINISH_REASON_LENGTH);
  last.mutable_usage()->set_prompt_tokens(10);
  last.mutable_usage()->set_cached_tokens(6);
  last.mutable_usage()->set_completion_tokens(2);
  EXPECT_EQ(encoder.Encode(last),
            "event: content_block_delta\n"
            R"(data: {"type":"content_block_delta","index":0,)"
            R"("delta":{"type":"text_delta","text":"lo"}})"
            "\n\n");
  EXPECT_EQ(encoder.Finish(Status::Ok()),
            "event: content_block_stop\n"
            R"(data: {"type":"content_block_stop","index":0})"
            "\n\n"
            "event: message_delta\n"
            R"(data: {"type":"message_delta","delta":{"stop_reason":"max_tokens",)"
            R"("stop_sequence":null},"usage":{"input_tokens":4,"cache_creation_input_tokens":0,)"
            R"("cache_read_input_tokens":6,"output_tokens":2}})"
            "\n\n"
            "event: message_stop\n"
            R"(data: {"type":"message_stop"})"
            "\n\n");
}

TEST(AnthropicStreamTest, MessageDeltaNamesTheMatchedStopSequence) {
  AnthropicStreamEncoder encoder(ResponseMeta{"msg_1", 0, "tiny"});
  encoder.Encode(Message("Hel"));
  v1::GenerateTextResponse last = Message("");
  last.set_finish_reason(v1::FINISH_REASON_STOP);
  last.set_stop_sequence("END");
  encoder.Encode(last);
  const std::string tail = encoder.Finish(Status::Ok());
  EXPECT_NE(tail.find(R"("delta":{"stop_reason":"stop_sequence","stop_sequence":"END"})"),
            std::string::npos)
      << tail;
}

// Reasoning, then text, then two calls: each part its own block, in order.
TEST(AnthropicStreamTest, ThinkingTextAndToolUseBlocks) {
  AnthropicStreamEncoder encoder(ResponseMeta{"msg_1", 0, "tiny"});
  v1::GenerateTextResponse think;
  think.set_reasoning("Hmm");
  std::string out = encoder.Encode(think);
  out += encoder.Encode(Message("Ok."));
  v1::GenerateTextResponse calls;
  for (const char* name : {"Bash", "Read"}) {
    v1::ToolCall* call = calls.add_tool_calls();
    call->set_id(std::string("id_") + name);
    call->set_name(name);
    call->set_arguments_json(R"({"a":1})");
  }
  calls.set_finish_reason(v1::FINISH_REASON_TOOL_CALLS);
  out += encoder.Encode(calls);
  out += encoder.Finish(Status::Ok());
  // Strip the event lines and message_start's body down to the sequence.
  std::string sequence;
  size_t at = 0;
  while ((at = out.find("data: ", at)) != std::string::npos) {
    const size_t end = out.find('\n', at);
    const auto event = nlohmann::json::parse(out.substr(at + 6, end - at - 6));
    if (event["type"] != "message_start") sequence += event.dump() + "\n";
    at = end;
  }
  EXPECT_EQ(
      sequence,
      R"({"type":"ping"})"
      "\n"
      R"({"content_block":{"signature":"","thinking":"","type":"thinking"},"index":0,"type":"content_block_start"})"
      "\n"
      R"({"delta":{"thinking":"Hmm","type":"thinking_delta"},"index":0,"type":"content_block_delta"})"
      "\n"
      R"({"index":0,"type":"content_block_stop"})"
      "\n"
      R"({"content_block":{"text":"","type":"text"},"index":1,"type":"content_block_start"})"
      "\n"
      R"({"delta":{"text":"Ok.","type":"text_delta"},"index":1,"type":"content_block_delta"})"
      "\n"
      R"({"index":1,"type":"content_block_stop"})"
      "\n"
      R"({"content_block":{"id":"id_Bash","input":{},"name":"Bash","type":"tool_use"},"index":2,"type":"content_block_start"})"
      "\n"
      R"({"delta":{"partial_json":"{\"a\":1}","type":"input_json_delta"},"index":2,"type":"content_block_delta"})"
      "\n"
      R"({"index":2,"type":"content_block_stop"})"
      "\n"
      R"({"content_block":{"id":"id_Read","input":{},"name":"Read","type":"tool_use"},"index":3,"type":"content_block_start"})"
      "\n"
      R"({"delta":{"partial_json":"{\"a\":1}","type":"input_json_delta"},"index":3,"type":"content_block_delta"})"
      "\n"
      R"({"index":3,"type":"content_block_stop"})"
      "\n"
      R"({"delta":{"stop_reason":"tool_use","stop_sequence":null},"type":"message_delta","usage":{"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"input_tokens":0,"output_tokens":0}})"
      "\n"
      R"({"type":"message_stop"})"
      "\n");
}

TEST(AnthropicStreamTest, KeepAliveOpensTheStreamThenPings) {
  AnthropicStreamEncoder encoder(ResponseMeta{"msg_1", 0, "tiny"});
  const std::string first = encoder.KeepAlive();
  EXPECT_EQ(first.rfind("event: message_start\n", 0), 0u) << first;
  EXPECT_NE(first.find("event: ping\n"), std::string::npos);
  EXPECT_EQ(encoder.KeepAlive(), "event: ping\ndata: {\"type\":\"ping\"}\n\n");
  // The stream's first message then opens no second message_start.
  EXPECT_EQ(encoder.Encode(Message("x")).find("message_start"), std::string::npos);
}

TEST(AnthropicStreamTest, ErrorEvent) {
  AnthropicStreamEncoder encoder(ResponseMeta{"msg_1", 0, "tiny"});
  encoder.Encode(Message("Hel"));
  EXPECT_EQ(encoder.Finish(UnavailableError("worker w1 failed")),
            "event: error\n"
            R"(data: {"type":"error","error":{"type":"overloaded_error",)"
            R"("message":"worker w1 failed"}})"
            "\n\n");
}

}  // namespace
}  // namespace kvmesh::router::gateway
