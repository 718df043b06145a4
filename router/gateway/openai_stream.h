// OpenAiStreamEncoder: the core's message stream as OpenAI server-sent events.
//
// Chat ("chat.completion.chunk"): a first chunk with the assistant role, one
// chunk per reasoning delta ({"reasoning_content"}), text delta
// ({"content"}) and tool call ({"tool_calls":[{index, id, type, function:
// {name, arguments}}]}, each call whole in one chunk), a chunk with an empty
// delta carrying finish_reason,
// then — with stream_options.include_usage — a chunk with no choices and the
// usage (every other chunk then carries "usage": null, as OpenAI does), and
// "data: [DONE]". Completions ("text_completion"): one chunk per text delta,
// the last one carrying finish_reason, then usage and [DONE] likewise.
// An error after the stream started becomes `data: {"error":{…}}` followed by
// [DONE]; OpenAI's SDKs raise it as an APIError.
#pragma once

#include <nlohmann/json.hpp>

#include "router/gateway/generation_result.h"
#include "router/gateway/stream_encoder.h"

namespace kvmesh::router::gateway {

class OpenAiStreamEncoder : public StreamEncoder {
 public:
  enum class Kind { kCompletion, kChat };

  OpenAiStreamEncoder(Kind kind, ResponseMeta meta, bool include_usage)
      : kind_(kind), meta_(std::move(meta)), include_usage_(include_usage) {}

  std::string Encode(const v1::GenerateTextResponse& message) override;
  std::string Finish(const Status& status) override;

 private:
  // The chunk object around one choice (or around none, for the usage chunk).
  nlohmann::ordered_json Chunk(nlohmann::ordered_json choices) const;
  std::string ChatChunk(nlohmann::ordered_json delta, v1::FinishReason finish) const;
  std::string CompletionChunk(const std::string& text, v1::FinishReason finish) const;

  Kind kind_;
  ResponseMeta meta_;
  bool include_usage_;
  bool started_ = false;
  bool finish_sent_ = false;
  int next_tool_call_index_ = 0;
  v1::Usage usage_;
};

}  // namespace kvmesh::router::gateway
