#include "router/gateway/openai_stream.h"

#include "router/gateway/http_errors.h"
#include "router/gateway/openai_api.h"
#include "router/gateway/openai_logprobs.h"
#include "router/gateway/sse.h"

namespace kvmesh::router::gateway {

using nlohmann::ordered_json;

namespace {

ordered_json FinishJson(v1::FinishReason finish) {
  if (finish == v1::FINISH_REASON_UNSPECIFIED) return nullptr;
  return OpenAiFinishReason(finish);
}

std::vector<v1::TokenLogprob> Entries(const v1::GenerateTextResponse& message) {
  return {message.logprobs().begin(), message.logprobs().end()};
}

}  // namespace

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

std::string OpenAiStreamEncoder::ChatChunk(uint32_t index, ordered_json delta,
                                           v1::FinishReason finish, ordered_json logprobs) const {
  ordered_json choice;
  choice["index"] = index;
  choice["delta"] = std::move(delta);
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = FinishJson(finish);
  return SseData(ToJsonText(Chunk(ordered_json::array({std::move(choice)}))));
}

std::string OpenAiStreamEncoder::CompletionChunk(uint32_t index, const std::string& text,
                                                 v1::FinishReason finish,
                                                 ordered_json logprobs) const {
  ordered_json choice;
  choice["text"] = text;
  choice["index"] = index;
  choice["logprobs"] = std::move(logprobs);
  choice["finish_reason"] = FinishJson(finish);
  return SseData(ToJsonText(Chunk(ordered_json::array({std::move(choice)}))));
}

std::string OpenAiStreamEncoder::EncodeChat(const v1::GenerateTextResponse& message,
                                            ChoiceState& state) {
  const uint32_t index = message.choice();
  std::string out;
  if (!state.started) {
    out +=
        ChatChunk(index, {{"role", "assistant"}, {"content", ""}}, v1::FINISH_REASON_UNSPECIFIED);
  }
  // The message's token logprobs ride on its first chunk (one with an empty
  // delta when the tokens showed nothing yet).
  ordered_json logprobs = nullptr;
  if (shape_.logprobs && message.logprobs_size() > 0) {
    logprobs = {{"content", ChatLogprobEntries(Entries(message))}, {"refusal", nullptr}};
  }
  auto chunk = [&](ordered_json delta) {
    out += ChatChunk(index, std::move(delta), v1::FINISH_REASON_UNSPECIFIED, std::move(logprobs));
    logprobs = nullptr;
  };
  if (!message.reasoning().empty()) chunk({{"reasoning_content", message.reasoning()}});
  if (!message.text().empty()) chunk({{"content", message.text()}});
  for (const v1::ToolCall& call : message.tool_calls()) {
    // Each call arrives whole: its one delta carries the id, the name and
    // all of its arguments.
    ordered_json entry = OpenAiToolCallJson(call);
    ordered_json delta_call;
    delta_call["index"] = state.next_tool_call_index++;
    for (auto& [key, value] : entry.items()) delta_call[key] = value;
    chunk({{"tool_calls", ordered_json::array({std::move(delta_call)})}});
  }
  if (!logprobs.is_null()) chunk(ordered_json::object());
  if (message.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
    out += ChatChunk(index, ordered_json::object(), message.finish_reason());
    state.finish_sent = true;
  }
  return out;
}

std::string OpenAiStreamEncoder::EncodeCompletion(const v1::GenerateTextResponse& message,
                                                  ChoiceState& state) {
  const uint32_t index = message.choice();
  std::string text;
  ordered_json logprobs = nullptr;
  if (!state.started && shape_.echo) {
    // Each choice opens with the prompt (and its logprobs).
    // As in the whole response: the scored tokens' text when there are any.
    std::string prompt = shape_.prompt_text;
    if (!prompt_logprobs_.empty()) {
      prompt.clear();
      for (const v1::TokenLogprob& e : prompt_logprobs_) prompt += e.text();
    }
    if (shape_.logprobs) {
      size_t offset = 0;
      AppendCompletionLogprobs(prompt_logprobs_, &offset, &logprobs);
    }
    text = prompt;
    state.text_offset = prompt.size();
  }
  text += message.text();
  if (shape_.logprobs && message.logprobs_size() > 0) {
    AppendCompletionLogprobs(Entries(message), &state.text_offset, &logprobs);
  }
  const v1::FinishReason finish = message.finish_reason();
  if (text.empty() && logprobs.is_null() && finish == v1::FINISH_REASON_UNSPECIFIED) return "";
  state.finish_sent = finish != v1::FINISH_REASON_UNSPECIFIED;
  return CompletionChunk(index, text, finish, std::move(logprobs));
}

std::string OpenAiStreamEncoder::Encode(const v1::GenerateTextResponse& message) {
  const uint32_t index = message.choice();
  if (index >= choices_.size()) choices_.resize(index + 1);
  ChoiceState& state = choices_[index];
  if (message.prompt_logprobs_size() > 0) {
    prompt_logprobs_.assign(message.prompt_logprobs().begin(), message.prompt_logprobs().end());
  }
  if (message.has_usage()) {
    state.completion_tokens = message.usage().completion_tokens();
    if (index == 0) usage_ = message.usage();
  }
  std::string out =
      kind_ == Kind::kChat ? EncodeChat(message, state) : EncodeCompletion(message, state);
  state.started = state.started || !out.empty() || kind_ == Kind::kChat;
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
  for (uint32_t i = 0; i < choices_.size(); ++i) {
    ChoiceState& state = choices_[i];
    if (state.finish_sent) continue;
    // The core ended the stream without naming a reason: report a plain stop.
    if (kind_ == Kind::kChat) {
      if (!state.started) {
        out +=
            ChatChunk(i, {{"role", "assistant"}, {"content", ""}}, v1::FINISH_REASON_UNSPECIFIED);
      }
      out += ChatChunk(i, ordered_json::object(), v1::FINISH_REASON_STOP);
    } else {
      out += CompletionChunk(i, "", v1::FINISH_REASON_STOP);
    }
  }
  if (include_usage_) {
    v1::Usage total = usage_;
    uint32_t completion = 0;
    for (const ChoiceState& state : choices_) completion += state.completion_tokens;
    total.set_completion_tokens(completion);
    ordered_json chunk = Chunk(ordered_json::array());
    chunk["usage"] = OpenAiUsageJson(total);
    out += SseData(ToJsonText(chunk));
  }
  out += kSseDone;
  return out;
}

}  // namespace kvmesh::router::gateway
