// What a finished generation produced, gathered from the core's messages, and
// the identity of the response that reports it. Plain values; one thread.
#pragma once

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

struct GenerationResult {
  std::string text;
  std::string reasoning;                 // chat: the model's reasoning
  std::vector<v1::ToolCall> tool_calls;  // chat: the calls it made
  v1::FinishReason finish_reason = v1::FINISH_REASON_UNSPECIFIED;
  v1::Usage usage;
  std::string worker;         // the first worker named by a message
  std::string stop_sequence;  // the stop string that ended it, if one did

  // Folds in one message of the core's stream (text deltas append; the last
  // message's finish reason and usage win).
  void Add(const v1::GenerateTextResponse& message) {
    text += message.text();
    reasoning += message.reasoning();
    for (const v1::ToolCall& call : message.tool_calls()) tool_calls.push_back(call);
    if (message.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
      finish_reason = message.finish_reason();
      stop_sequence = message.stop_sequence();
    }
    if (message.has_usage()) usage = message.usage();
    if (worker.empty()) worker = message.worker();
  }
};

}  // namespace kvmesh::router::gateway
