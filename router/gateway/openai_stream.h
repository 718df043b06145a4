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
// With n > 1 every choice streams its own chunks ("index"), each ending with
// its finish_reason. With logprobs each chunk of new tokens carries their
// logprobs (chat: {"content": […]}; completions: the four arrays, text_offset
// counting from the choice's start). Completions with echo begin each
// choice with the prompt (and its logprobs).
// An error after the stream started becomes `data: {"error":{…}}` followed by
// [DONE]; OpenAI's SDKs raise it as an APIError.
#pragma once

#include <algorithm>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "router/gateway/generation_result.h"
#include "router/gateway/stream_encoder.h"

namespace kvmesh::router::gateway {

class OpenAiStreamEncoder : public StreamEncoder {
 public:
  enum class Kind { kCompletion, kChat };

  struct Shape {
    int n = 1;
    bool logprobs = false;
    bool echo = false;        // completions: each choice starts with the prompt
    std::string prompt_text;  // … this text (empty: the prompt logprobs' tokens)
  };

  OpenAiStreamEncoder(Kind kind, ResponseMeta meta, bool include_usage, Shape shape)
      : kind_(kind),
        meta_(std::move(meta)),
        include_usage_(include_usage),
        shape_(std::move(shape)),
        choices_(std::max(1, shape_.n)) {}
  OpenAiStreamEncoder(Kind kind, ResponseMeta meta, bool include_usage)
      : OpenAiStreamEncoder(kind, std::move(meta), include_usage, Shape()) {}

  std::string Encode(const v1::GenerateTextResponse& message) override;
  std::string Finish(const Status& status) override;

 private:
  // The chunk object around one choice (or around none, for the usage chunk).
  struct ChoiceState {
    bool started = false;
    bool finish_sent = false;
    int next_tool_call_index = 0;
    size_t text_offset = 0;  // completions: bytes of the choice's text so far
    uint32_t completion_tokens = 0;
  };

  nlohmann::ordered_json Chunk(nlohmann::ordered_json choices) const;
  std::string ChatChunk(uint32_t index, nlohmann::ordered_json delta, v1::FinishReason finish,
                        nlohmann::ordered_json logprobs = nullptr) const;
  std::string CompletionChunk(uint32_t index, const std::string& text, v1::FinishReason finish,
                              nlohmann::ordered_json logprobs = nullptr) const;
  std::string EncodeChat(const v1::GenerateTextResponse& message, ChoiceState& state);
  std::string EncodeCompletion(const v1::GenerateTextResponse& message, ChoiceState& state);

  Kind kind_;
  ResponseMeta meta_;
  bool include_usage_;
  Shape shape_;
  std::vector<ChoiceState> choices_;
  std::vector<v1::TokenLogprob> prompt_logprobs_;  // echo: from choice 0's first message
  v1::Usage usage_;
};

}  // namespace kvmesh::router::gateway
