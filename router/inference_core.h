// InferenceCore: what the router's front doors (the gRPC Inference service and
// the HTTP gateway) call to serve a request. The router implements it (route,
// forward to a worker, relay the stream); tests implement fakes.
//
// Calls may come from many threads at once. A streaming call delivers every
// message to `on_message` in order, from one thread at a time; returning
// false from `on_message` cancels the request (the client went away). While
// the prompt is computed the core also passes progress messages (IsProgress:
// nothing for the client) at each prefill chunk, so that a client gone during
// a long prefill stops it within an engine step; front doors send them
// nowhere and return whether their client is still there. The
// final Status is OK when the stream ended normally (the last message carries
// the finish reason and usage) and otherwise says why:
//   INVALID_ARGUMENT   malformed request (bad field values, prompt too long)
//   NOT_FOUND          unknown model
//   RESOURCE_EXHAUSTED overloaded: the client should retry later
//   UNAVAILABLE        no healthy worker for the model
//   CANCELLED / DEADLINE_EXCEEDED
// A request that fails before its first message has sent nothing.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/status.h"
#include "kvmesh/v1/inference.pb.h"

namespace kvmesh::router {

using MessageCallback = std::function<bool(const v1::GenerateTextResponse&)>;

// A message with nothing for the client: the request moved (a prefill
// chunk) and it carries no field but who serves it (worker, request_id,
// choice). InferenceCoreTest.EveryOtherFieldMakesAMessageMoreThanProgress
// holds this list to the proto.
inline bool IsProgress(const v1::GenerateTextResponse& m) {
  return m.text().empty() && m.tokens_size() == 0 &&
         m.finish_reason() == v1::FINISH_REASON_UNSPECIFIED && !m.has_usage() && !m.has_timings() &&
         m.stop_sequence().empty() && m.reasoning().empty() && m.tool_calls_size() == 0 &&
         m.logprobs_size() == 0 && m.prompt_logprobs_size() == 0;
}

class InferenceCore {
 public:
  virtual ~InferenceCore() = default;

  virtual Status Generate(const v1::GenerateTextRequest& request,
                          const MessageCallback& on_message) = 0;
  // Renders the messages with the model's chat template, then generates.
  virtual Status Chat(const v1::ChatRequest& request, const MessageCallback& on_message) = 0;
  // The prompt tokens Chat would send for `request` (rendered and
  // tokenized, nothing generated).
  virtual StatusOr<int64_t> CountChatTokens(const v1::ChatRequest& request) {
    return UnimplementedError("token counting is not available here");
  }
  virtual StatusOr<v1::ListModelsResponse> ListModels() = 0;
  virtual StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) = 0;
};

}  // namespace kvmesh::router
