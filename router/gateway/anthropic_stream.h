// AnthropicStreamEncoder: the core's message stream as Anthropic's event
// sequence, each as "event: NAME\ndata: {json}\n\n":
//   message_start (usage zero: the core reports usage with its last message),
//   content_block_start (one text block, index 0), ping,
//   content_block_delta (text_delta) per text delta,
//   content_block_stop,
//   message_delta (stop_reason, stop_sequence null, the whole usage — the
//     SDKs take input and cache counts from here when present),
//   message_stop.
// An error after the stream started becomes an "error" event with
// {"type":"error","error":{…}}, which the SDKs raise.
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

 private:
  std::string Start();

  ResponseMeta meta_;
  bool started_ = false;
  v1::FinishReason finish_reason_ = v1::FINISH_REASON_UNSPECIFIED;
  std::string stop_sequence_;
  v1::Usage usage_;
};

}  // namespace kvmesh::router::gateway
