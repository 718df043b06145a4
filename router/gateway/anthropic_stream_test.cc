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
            "event: content_block_start\n"
            R"(data: {"type":"content_block_start","index":0,)"
            R"("content_block":{"type":"text","text":""}})"
            "\n\n"
            "event: ping\n"
            R"(data: {"type":"ping"})"
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
