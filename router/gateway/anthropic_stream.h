// AnthropicStreamEncoder: the core's message stream as Anthropic's event
// sequence, each as "event: NAME\ndata: {json}\n\n":
//   message_start (usage zero: the core reports usage with its last message),
//   ping,
//   then content blocks in the order the model wrote them, each as
//     content_block_start, content_block_delta…, content_block_stop:
//     thinking (thinking_delta per reasoning delta),
//     text (text_delta per text delta),
//     tool_use (one input_json_delta holding the whole input: the router
//       hands each call over once it is complete);
//   a stream with no block at all gets one empty text block, as the
//   non-streamed answer has;
//   message_delta (stop_reason, stop_sequence, the whole usage — the SDKs
//     take input and cache counts from here when present),
//   message_stop.
// KeepAlive() is a ping event (after message_start when nothing was sent
// yet), for long prefills. An error after the stream started becomes an
// "error" event with {"type":"error","error":{…}}, which the SDKs raise.
#pragma once

#include <nlohmann/json.hpp>

#include "router/gateway/generation_result.h"
#include "router/gateway/stream_encoder.h"

namespace kvmesh::router::gateway {

class AnthropicStreamEncoder : public StreamEncoder {
 public:
  explicit AnthropicStreamEncoder(ResponseMeta meta) : meta_(std::move(meta)) {}

  std::string Encode(const v1::GenerateTextResponse& message) override;
  std::string Finish(const Status& status) override;
  std::string KeepAlive() override;

 private:
  enum class Block { kNone, kThinking, kText };

  std::string Start();
  // Closes the open block, if any, and opens `block` (kNone: only closes).
  std::string SwitchTo(Block block);
  std::string BlockStart(const nlohmann::ordered_json& content_block);
  std::string BlockStop();

  ResponseMeta meta_;
  bool started_ = false;
  Block open_ = Block::kNone;
  int next_index_ = 0;  // the index the next block gets
  v1::FinishReason finish_reason_ = v1::FINISH_REASON_UNSPECIFIED;
  std::string stop_sequence_;
  v1::Usage usage_;
};

}  // namespace kvmesh::router::gateway
