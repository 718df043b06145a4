// What a finished generation produced, gathered from the core's messages, and
// the identity of the response that reports it. Plain values; one thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kvmesh/v1/inference.pb.h"

namespace kvmesh::router::gateway {

// Names a response: its id ("chatcmpl-…", "cmpl-…", "msg_…"), creation time
// (Unix seconds) and model.
struct ResponseMeta {
  std::string id;
  int64_t created = 0;
  std::string model;
};

// One choice of a generation.
struct ChoiceResult {
  std::string text;
  std::string reasoning;                 // chat: the model's reasoning
  std::vector<v1::ToolCall> tool_calls;  // chat: the calls it made
  v1::FinishReason finish_reason = v1::FINISH_REASON_UNSPECIFIED;
  std::string stop_sequence;               // the stop string that ended it, if one did
  v1::Usage usage;                         // this choice's
  std::vector<v1::TokenLogprob> logprobs;  // with GenerationOptions.logprobs

  // Folds in one message of this choice (text deltas append; the last
  // message's finish reason and usage win).
  void Add(const v1::GenerateTextResponse& message) {
    text += message.text();
    reasoning += message.reasoning();
    for (const v1::ToolCall& call : message.tool_calls()) tool_calls.push_back(call);
    for (const v1::TokenLogprob& lp : message.logprobs()) logprobs.push_back(lp);
    if (message.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
      finish_reason = message.finish_reason();
      stop_sequence = message.stop_sequence();
    }
    if (message.has_usage()) usage = message.usage();
  }
};

// A generation: choice 0's fields directly (most requests have one choice),
// the others in `more_choices`.
struct GenerationResult : ChoiceResult {
  std::vector<ChoiceResult> more_choices;         // choices 1 … n-1
  std::vector<v1::TokenLogprob> prompt_logprobs;  // with prompt_logprobs
  std::string worker;                             // the first worker named by a message

  void Add(const v1::GenerateTextResponse& message) {
    if (worker.empty()) worker = message.worker();
    for (const v1::TokenLogprob& lp : message.prompt_logprobs()) prompt_logprobs.push_back(lp);
    if (message.choice() == 0) {
      ChoiceResult::Add(message);
      return;
    }
    if (more_choices.size() < message.choice()) more_choices.resize(message.choice());
    more_choices[message.choice() - 1].Add(message);
  }

  int num_choices() const { return 1 + static_cast<int>(more_choices.size()); }
  const ChoiceResult& choice(int i) const { return i == 0 ? *this : more_choices[i - 1]; }

  // The request's usage: the prompt once (as choice 0 saw it), the
  // completions of every choice.
  v1::Usage total_usage() const {
    v1::Usage total = usage;
    for (const ChoiceResult& c : more_choices) {
      total.set_completion_tokens(total.completion_tokens() + c.usage.completion_tokens());
    }
    return total;
  }
};

}  // namespace kvmesh::router::gateway
