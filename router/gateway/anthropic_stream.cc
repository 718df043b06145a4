#include "router/gateway/anthropic_stream.h"

#include "router/gateway/anthropic_api.h"
#include "router/gateway/http_errors.h"
#include "router/gateway/sse.h"

namespace kvmesh::router::gateway {

using nlohmann::ordered_json;

namespace {

std::string Event(std::string_view name, const ordered_json& data) {
  return SseEvent(name, ToJsonText(data));
}

}  // namespace

std::string AnthropicStreamEncoder::Start() {
  started_ = true;
  ordered_json message;
  message["id"] = meta_.id;
  message["type"] = "message";
  message["role"] = "assistant";
  message["model"] = meta_.model;
  message["content"] = ordered_json::array();
  message["stop_reason"] = nullptr;
  message["stop_sequence"] = nullptr;
  message["usage"] = AnthropicUsageJson(v1::Usage());
  ordered_json start;
  start["type"] = "message_start";
  start["message"] = std::move(message);

  ordered_json block_start;
  block_start["type"] = "content_block_start";
  block_start["index"] = 0;
  block_start["content_block"] = {{"type", "text"}, {"text", ""}};

  std::string out = Event("message_start", start);
  out += Event("content_block_start", block_start);
  out += Event("ping", {{"type", "ping"}});
  return out;
}

std::string AnthropicStreamEncoder::Encode(const v1::GenerateTextResponse& message) {
  std::string out;
  if (!started_) out += Start();
  if (!message.text().empty()) {
    ordered_json delta;
    delta["type"] = "content_block_delta";
    delta["index"] = 0;
    delta["delta"] = {{"type", "text_delta"}, {"text", message.text()}};
    out += Event("content_block_delta", delta);
  }
  if (message.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
    finish_reason_ = message.finish_reason();
    stop_sequence_ = message.stop_sequence();
  }
  if (message.has_usage()) usage_ = message.usage();
  return out;
}

std::string AnthropicStreamEncoder::Finish(const Status& status) {
  if (!status.ok()) {
    return Event("error", AnthropicErrorBody(HttpStatusFor(status.code()), status.message()));
  }
  std::string out;
  if (!started_) out += Start();
  ordered_json block_stop;
  block_stop["type"] = "content_block_stop";
  block_stop["index"] = 0;
  out += Event("content_block_stop", block_stop);

  ordered_json delta;
  delta["type"] = "message_delta";
  delta["delta"] = {{"stop_reason", AnthropicStopReason(finish_reason_, stop_sequence_)},
                    {"stop_sequence", AnthropicStopSequence(stop_sequence_)}};
  delta["usage"] = AnthropicUsageJson(usage_);
  out += Event("message_delta", delta);
  out += Event("message_stop", {{"type", "message_stop"}});
  return out;
}

}  // namespace kvmesh::router::gateway
