// OpenAI response bodies: completions, chat completions (with tool calls and
// logprobs), usage, finish reasons and the model list.
#include <algorithm>
#include <numeric>
#include <string>
#include <string_view>
#include <vector>

#include "router/gateway/openai_api.h"
#include "router/gateway/openai_logprobs.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::ordered_json;

ordered_json NullableFinishReason(v1::FinishReason reason) {
  return ordered_json(OpenAiFinishReason(reason));
}

// The body around the choices, the same for both endpoints.
ordered_json ResponseJson(const ResponseMeta& meta, std::string_view object, ordered_json choices,
                          const GenerationResult& result) {
  ordered_json out;
  out["id"] = meta.id;
  out["object"] = object;
  out["created"] = meta.created;
  out["model"] = meta.model;
  out["choices"] = std::move(choices);
  out["usage"] = OpenAiUsageJson(result.total_usage());
  return out;
}

}  // namespace

std::string_view OpenAiFinishReason(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH:
    case v1::FINISH_REASON_CONTEXT:
      return "length";
    case v1::FINISH_REASON_CANCELLED:
      return "cancelled";
    case v1::FINISH_REASON_TOOL_CALLS:
      return "tool_calls";
    default:
      return "stop";
  }
}

ordered_json OpenAiUsageJson(const v1::Usage& usage) {
  ordered_json out;
  out["prompt_tokens"] = usage.prompt_tokens();
  out["completion_tokens"] = usage.completion_tokens();
  out["total_tokens"] = usage.prompt_tokens() + usage.completion_tokens();
  out["prompt_tokens_details"] = {{"cached_tokens", usage.cached_tokens()}};
  return out;
}

ordered_json OpenAiCompletionJson(const ResponseMeta& meta, const GenerationResult& result,
                                  const CompletionShape& shape) {
  // best_of: the n choices with the highest mean logprob, in that order.
  std::vector<int> picked(result.num_choices());
  std::iota(picked.begin(), picked.end(), 0);
  if (shape.best_of > shape.n && result.num_choices() > shape.n) {
    std::stable_sort(picked.begin(), picked.end(), [&result](int a, int b) {
      return MeanLogprob(result.choice(a).logprobs) > MeanLogprob(result.choice(b).logprobs);
    });
    picked.resize(shape.n);
  }
  // With prompt logprobs the echo is their tokens' text, so text_offset
  // indexes the text returned; without, the prompt as given.
  std::string prompt_text = shape.prompt_text;
  if (shape.echo && !result.prompt_logprobs.empty()) {
    prompt_text.clear();
    for (const v1::TokenLogprob& e : result.prompt_logprobs) prompt_text += e.text();
  }
  ordered_json choices = ordered_json::array();
  for (size_t i = 0; i < picked.size(); ++i) {
    const ChoiceResult& c = result.choice(picked[i]);
    ordered_json choice;
    choice["text"] = shape.echo ? prompt_text + c.text : c.text;
    choice["index"] = i;
    if (shape.logprobs < 0) {
      choice["logprobs"] = nullptr;
    } else {
      ordered_json logprobs;
      size_t offset = 0;
      if (shape.echo) AppendCompletionLogprobs(result.prompt_logprobs, &offset, &logprobs);
      offset = shape.echo ? prompt_text.size() : 0;
      AppendCompletionLogprobs(c.logprobs, &offset, &logprobs);
      choice["logprobs"] = std::move(logprobs);
    }
    choice["finish_reason"] = NullableFinishReason(c.finish_reason);
    choices.push_back(std::move(choice));
  }
  return ResponseJson(meta, "text_completion", std::move(choices), result);
}

ordered_json OpenAiToolCallJson(const v1::ToolCall& call) {
  ordered_json out;
  out["id"] = call.id();
  out["type"] = "function";
  out["function"] = {{"name", call.name()}, {"arguments", call.arguments_json()}};
  return out;
}

ordered_json OpenAiChatCompletionJson(const ResponseMeta& meta, const GenerationResult& result,
                                      bool logprobs) {
  ordered_json choices = ordered_json::array();
  for (int i = 0; i < result.num_choices(); ++i) {
    const ChoiceResult& c = result.choice(i);
    ordered_json message;
    message["role"] = "assistant";
    if (c.text.empty() && !c.tool_calls.empty()) {
      message["content"] = nullptr;
    } else {
      message["content"] = c.text;
    }
    if (!c.reasoning.empty()) message["reasoning_content"] = c.reasoning;
    if (!c.tool_calls.empty()) {
      message["tool_calls"] = ordered_json::array();
      for (const v1::ToolCall& call : c.tool_calls) {
        message["tool_calls"].push_back(OpenAiToolCallJson(call));
      }
    }
    ordered_json choice;
    choice["index"] = i;
    choice["message"] = std::move(message);
    choice["logprobs"] = logprobs ? ChatLogprobs(c.logprobs) : ordered_json(nullptr);
    choice["finish_reason"] = NullableFinishReason(c.finish_reason);
    choices.push_back(std::move(choice));
  }
  return ResponseJson(meta, "chat.completion", std::move(choices), result);
}

ordered_json OpenAiModelsJson(const v1::ListModelsResponse& models) {
  ordered_json data = ordered_json::array();
  for (const v1::ModelInfo& model : models.models()) {
    ordered_json entry;
    entry["id"] = model.name();
    entry["object"] = "model";
    entry["created"] = 0;
    entry["owned_by"] = "kvmesh";
    entry["context_length"] = model.context_length();
    entry["workers"] = model.workers();
    if (!model.alias_of().empty()) entry["alias_of"] = model.alias_of();
    data.push_back(std::move(entry));
  }
  ordered_json out;
  out["object"] = "list";
  out["data"] = std::move(data);
  return out;
}

}  // namespace kvmesh::router::gateway
