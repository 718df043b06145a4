#include "tests/gateway/fake_inference_core.h"

#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace kvmesh::router::testing {

Status FakeInferenceCore::Generate(const v1::GenerateTextRequest& request,
                                   const MessageCallback& on_message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_generate_ = request;
  }
  uint32_t prompt_tokens = request.prompt_tokens_size() > 0
                               ? static_cast<uint32_t>(request.prompt_tokens_size())
                               : static_cast<uint32_t>(request.prompt().size());
  return Run(request.model(), request.options(), request.request_id(), prompt_tokens, on_message);
}

Status FakeInferenceCore::Chat(const v1::ChatRequest& request, const MessageCallback& on_message) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    last_chat_ = request;
  }
  uint32_t prompt_tokens = 0;
  for (const v1::ChatMessage& message : request.messages()) {
    prompt_tokens += static_cast<uint32_t>(message.content().size());
  }
  if (request.model() == "tools") return RunTools(request, prompt_tokens, on_message);
  return Run(request.model(), request.options(), request.request_id(), prompt_tokens, on_message);
}

Status FakeInferenceCore::RunTools(const v1::ChatRequest& request, uint32_t prompt_tokens,
                                   const MessageCallback& on_message) {
  const v1::ChatMessage& last = request.messages(request.messages_size() - 1);
  v1::GenerateTextResponse think;
  think.set_reasoning("Thinking.");
  think.set_worker("worker-a");
  if (!on_message(think)) return CancelledError("the client cancelled the request");
  v1::GenerateTextResponse answer;
  answer.set_worker("worker-a");
  if (last.role() == "tool") {
    answer.set_text("The tool said: " + last.content());
    answer.set_finish_reason(v1::FINISH_REASON_STOP);
  } else {
    auto tools = nlohmann::json::parse(request.tools_json(), nullptr, /*allow_exceptions=*/false);
    if (!tools.is_array() || tools.empty()) {
      return InvalidArgumentError("model \"tools\" needs tools to call");
    }
    v1::ToolCall* call = answer.add_tool_calls();
    call->set_id("call_fake1");
    call->set_name(tools[0]["function"]["name"].get<std::string>());
    call->set_arguments_json(nlohmann::json({{"query", last.content()}}).dump());
    answer.set_finish_reason(v1::FINISH_REASON_TOOL_CALLS);
  }
  answer.mutable_usage()->set_prompt_tokens(prompt_tokens);
  answer.mutable_usage()->set_completion_tokens(2);
  return on_message(answer) ? Status::Ok() : CancelledError("the client cancelled the request");
}

Status FakeInferenceCore::Run(const std::string& model, const v1::GenerationOptions& options,
                              const std::string& request_id, uint32_t prompt_tokens,
                              const MessageCallback& on_message) {
  std::vector<std::string> pieces;
  std::chrono::milliseconds delay{0};
  if (model.empty() || model == "tiny") {
    pieces = {"Hello", ",", " world", "!"};
  } else if (model == "slow") {
    pieces.assign(1000, "tick ");
    delay = std::chrono::milliseconds(10);
  } else if (model == "overloaded") {
    return ResourceExhaustedError("all workers for \"overloaded\" are at capacity");
  } else if (model == "broken") {
    pieces = {"Hel"};
  } else {
    std::string message = "unknown model \"";
    message += model;
    message += '"';
    return NotFoundError(std::move(message));
  }
  size_t count = pieces.size();
  bool truncated = options.has_max_tokens() && static_cast<size_t>(options.max_tokens()) < count;
  if (truncated) count = static_cast<size_t>(options.max_tokens());

  for (size_t i = 0; i < count; ++i) {
    if (delay.count() > 0) std::this_thread::sleep_for(delay);
    v1::GenerateTextResponse message;
    message.set_text(pieces[i]);
    message.add_tokens(static_cast<int32_t>(101 + i));
    message.set_worker("worker-a");
    message.set_request_id(request_id);
    bool last = i + 1 == count;
    if (last && model != "broken") {
      message.set_finish_reason(truncated ? v1::FINISH_REASON_LENGTH : v1::FINISH_REASON_STOP);
      v1::Usage* usage = message.mutable_usage();
      usage->set_prompt_tokens(prompt_tokens);
      usage->set_cached_tokens(prompt_tokens / 2);
      usage->set_completion_tokens(static_cast<uint32_t>(count));
    }
    if (!on_message(message)) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        ++cancellations_;
      }
      cancelled_.notify_all();
      return CancelledError("the client went away");
    }
  }
  if (model == "broken") return UnavailableError("worker-a failed in the middle of the answer");
  return Status::Ok();
}

StatusOr<v1::ListModelsResponse> FakeInferenceCore::ListModels() {
  v1::ListModelsResponse response;
  for (const char* name : {"tiny", "slow"}) {
    v1::ModelInfo* model = response.add_models();
    model->set_name(name);
    model->set_context_length(512);
    model->set_workers(1);
  }
  return response;
}

StatusOr<v1::TokenizeResponse> FakeInferenceCore::Tokenize(const v1::TokenizeRequest& request) {
  v1::TokenizeResponse response;
  for (char c : request.text()) response.add_tokens(static_cast<unsigned char>(c));
  return response;
}

v1::GenerateTextRequest FakeInferenceCore::last_generate() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_generate_;
}

v1::ChatRequest FakeInferenceCore::last_chat() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return last_chat_;
}

int FakeInferenceCore::cancellations() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cancellations_;
}

bool FakeInferenceCore::WaitForCancellations(int count, std::chrono::milliseconds timeout) const {
  std::unique_lock<std::mutex> lock(mutex_);
  return cancelled_.wait_for(lock, timeout, [&] { return cancellations_ >= count; });
}

}  // namespace kvmesh::router::testing
