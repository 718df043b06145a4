#include "router/gateway/openai_stream.h"

#include "router/gateway/http_errors.h"
#include "router/gateway/openai_api.h"
#include "router/gateway/sse.h"

namespace kvmesh::router::gateway {

using nlohmann::ordered_json;

ordered_json OpenAiStreamEncoder::Chunk(ordered_json choices) const {
  ordered_json chunk;
  chunk["id"] = meta_.id;
  chunk["object"] = kind_ == Kind::kChat ? "chat.completion.chunk" : "text_completion";
  chunk["created"] = meta_.created;
  chunk["model"] = meta_.model;
  chunk["choices"] = std::move(choices);
  if (include_usage_) chunk["usage"] = nullptr;
  return chunk;
}

std::string OpenAiStreamEncoder::ChatChunk(ordered_json delta, v1::FinishReason finish) const {
  ordered_json choice;
  choice["index"] = 0;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = nullptr;
  if (finish == v1::FINISH_REASON_UNSPECIFIED) {
    choice["finish_reason"] = nullptr;
  } else {
    choice["finish_reason"] = OpenAiFinishReason(finish);
  }
  return SseData(ToJsonText(Chunk(ordered_json::array({std::move(choice)}))));
}

std::string OpenAiStreamEncoder::CompletionChunk(const std::string& text,
                                                 v1::FinishReason finish) const {
  ordered_json choice;
  choice["text"] = text;
  choice["index"] = 0;
  choice["logprobs"] = nullptr;
  if (finish == v1::FINISH_REASON_UNSPECIFIED) {
    choice["finish_reason"] = nullptr;
  } else {
    choice["finish_reason"] = OpenAiFinishReason(finish);
  }
  return SseData(ToJsonText(Chunk(ordered_json::array({std::move(choice)}))));
}

std::string OpenAiStreamEncoder::Encode(const v1::GenerateTextResponse& message) {
  std::string out;
  if (message.has_usage()) usage_ = message.usage();
  v1::FinishReason finish = message.finish_reason();
  if (kind_ == Kind::kChat) {
    if (!started_) {
      out += ChatChunk({{"role", "assistant"}, {"content", ""}}, v1::FINISH_REASON_UNSPECIFIED);
    }
    if (!message.reasoning().empty()) {
      out += ChatChunk({{"reasoning_content", message.reasoning()}}, v1::FINISH_REASON_UNSPECIFIED);
    }
    if (!message.text().empty()) {
      out += ChatChunk({{"content", message.text()}}, v1::FINISH_REASON_UNSPECIFIED);
    }
    for (const v1::ToolCall& call : message.tool_calls()) {
      // Each call arrives whole: its one delta carries the id, the name and
      // all of its arguments.
      ordered_json entry = OpenAiToolCallJson(call);
      ordered_json delta_call;
      delta_call["index"] = next_tool_call_index_++;
      for (auto& [key, value] : entry.items()) delta_call[key] = value;
      out += ChatChunk({{"tool_calls", ordered_json::array({std::move(delta_call)})}},
                       v1::FINISH_REASON_UNSPECIFIED);
    }
    if (finish != v1::FINISH_REASON_UNSPECIFIED) {
      out += ChatChunk(ordered_json::object(), finish);
      finish_sent_ = true;
    }
  } else if (!message.text().empty() || finish != v1::FINISH_REASON_UNSPECIFIED) {
    out += CompletionChunk(message.text(), finish);
    finish_sent_ = finish != v1::FINISH_REASON_UNSPECIFIED;
  }
  started_ = true;
  return out;
}

std::string OpenAiStreamEncoder::Finish(const Status& status) {
  std::string out;
  if (!status.ok()) {
    int http_status = HttpStatusFor(status.code());
    out += SseData(ToJsonText(OpenAiErrorBody(http_status, status.message())));
    out += kSseDone;
    return out;
  }
  if (!finish_sent_) {
    // The core ended the stream without naming a reason: report a plain stop.
    if (kind_ == Kind::kChat) {
      if (!started_) {
        out += ChatChunk({{"role", "assistant"}, {"content", ""}}, v1::FINISH_REASON_UNSPECIFIED);
      }
      out += ChatChunk(ordered_json::object(), v1::FINISH_REASON_STOP);
    } else {
      out += CompletionChunk("", v1::FINISH_REASON_STOP);
    }
  }
  if (include_usage_) {
    ordered_json chunk = Chunk(ordered_json::array());
    chunk["usage"] = OpenAiUsageJson(usage_);
    out += SseData(ToJsonText(chunk));
  }
  out += kSseDone;
  return out;
}

}  // namespace kvmesh::router::gateway
