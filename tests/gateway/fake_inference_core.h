// FakeInferenceCore: a deterministic InferenceCore for gateway tests and the
// SDK probe server. Behaviour is chosen by model name, so a test (or the
// node probe, which can only send HTTP) picks it per request:
//   "tiny"        answers "Hello, world!" as four messages "Hello", ",",
//                 " world", "!" (token ids 101..104), fewer with finish LENGTH
//                 when max_tokens < 4; usage: prompt_tokens = prompt bytes
//                 (chat: content bytes; token prompts: their count),
//                 cached_tokens = prompt_tokens / 2, completion = messages.
//   "slow"        1000 messages "tick " 10 ms apart (disconnect tests).
//   "overloaded"  RESOURCE_EXHAUSTED before any message.
//   "broken"      one message "Hel", then UNAVAILABLE.
//   "tools"       chat only, as the router splits a model's output: the
//                 reasoning "Thinking.", then a call of the first offered tool
//                 (id "call_fake1", arguments {"query": last message}) with
//                 finish TOOL_CALLS; after a tool result, the text "The tool
//                 said: RESULT" with finish STOP.
//   anything else NOT_FOUND (an empty model means "tiny").
// Every message names worker "worker-a". Thread-safe.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "router/inference_core.h"

namespace kvmesh::router::testing {

class FakeInferenceCore : public InferenceCore {
 public:
  Status Generate(const v1::GenerateTextRequest& request,
                  const MessageCallback& on_message) override;
  Status Chat(const v1::ChatRequest& request, const MessageCallback& on_message) override;
  StatusOr<v1::ListModelsResponse> ListModels() override;
  StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) override;

  v1::GenerateTextRequest last_generate() const;
  v1::ChatRequest last_chat() const;
  // Calls that stopped because a callback returned false.
  int cancellations() const;
  // Waits until cancellations() >= count; false on timeout.
  bool WaitForCancellations(int count, std::chrono::milliseconds timeout) const;

 private:
  Status RunTools(const v1::ChatRequest& request, uint32_t prompt_tokens,
                  const MessageCallback& on_message);
  Status Run(const std::string& model, const v1::GenerationOptions& options,
             const std::string& request_id, uint32_t prompt_tokens,
             const MessageCallback& on_message);

  mutable std::mutex mutex_;
  mutable std::condition_variable cancelled_;
  v1::GenerateTextRequest last_generate_;  // guarded by mutex_
  v1::ChatRequest last_chat_;              // guarded by mutex_
  int cancellations_ = 0;                  // guarded by mutex_
};

}  // namespace kvmesh::router::testing
