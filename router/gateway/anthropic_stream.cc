#include "router/gateway/anthropic_stream.h"

#include "router/gateway/anthropic_api.h"
#include "router/gateway/chat_tools.h"
#include "router/gateway/http_errors.h"
#include "router/gateway/sse.h"

namespace kvmesh::router::gateway {

using nlohmann::ordered_json;

namespace {

std::string Event(std::string_view name, const ordered_json& data) {
  return SseEvent(name, ToJsonText(data));
}

std::string Delta(int index, ordered_json delta) {
  ordered_json event;
  event["type"] = "content_block_delta";
  event["index"] = index;
  event["delta"] = std::move(delta);
  return Event("content_block_delta", event);
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
  return Event("message_start", start) + Event("ping", {{"type", "ping"}});
}

std::string AnthropicStreamEncoder::BlockStart(const ordered_json& content_block) {
  ordered_json event;
  event["type"] = "content_block_start";
  event["index"] = next_index_;
  event["content_block"] = content_block;
  return Event("content_block_start", event);
}

std::string AnthropicStreamEncoder::BlockStop() {
  ordered_json event;
  event["type"] = "content_block_stop";
  event["index"] = next_index_++;
  return Event("content_block_stop", event);
}

std::string AnthropicStreamEncoder::SwitchTo(Block block) {
  if (open_ == block) return "";
  std::string out;
  if (open_ != Block::kNone) out += BlockStop();
  open_ = block;
  if (block == Block::kThinking) out += BlockStart(AnthropicThinkingBlock(""));
  if (block == Block::kText) out += BlockStart(AnthropicTextBlock(""));
  return out;
}

std::string AnthropicStreamEncoder::Encode(const v1::GenerateTextResponse& message) {
  std::string out;
  if (!started_) out += Start();
  if (!message.reasoning().empty()) {
    out += SwitchTo(Block::kThinking);
    out += Delta(next_index_, {{"type", "thinking_delta"}, {"thinking", message.reasoning()}});
  }
  if (!message.text().empty()) {
    out += SwitchTo(Block::kText);
    out += Delta(next_index_, {{"type", "text_delta"}, {"text", message.text()}});
  }
  for (const v1::ToolCall& call : message.tool_calls()) {
    out += SwitchTo(Block::kNone);
    out += BlockStart(AnthropicToolUseBlock(call, /*with_input=*/false));
    out += Delta(next_index_,
                 {{"type", "input_json_delta"}, {"partial_json", ToolCallArguments(call).dump()}});
    out += BlockStop();
  }
  if (message.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
    finish_reason_ = message.finish_reason();
    stop_sequence_ = message.stop_sequence();
  }
  if (message.has_usage()) usage_ = message.usage();
  return out;
}

std::string AnthropicStreamEncoder::KeepAlive() {
  if (!started_) return Start();
  return Event("ping", {{"type", "ping"}});
}

std::string AnthropicStreamEncoder::Finish(const Status& status) {
  if (!status.ok()) {
    return Event("error", AnthropicErrorBody(HttpStatusFor(status.code()), status.message()));
  }
  std::string out;
  if (!started_) out += Start();
  if (open_ == Block::kNone && next_index_ == 0) out += SwitchTo(Block::kText);
  out += SwitchTo(Block::kNone);

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
