// ResponsesStreamEncoder: the core's message stream as the Responses API's
// events (data-only SSE, each event's "type" in its JSON, numbered by
// "sequence_number"):
//   response.created, response.in_progress (the response, no output yet);
//   per reasoning run: response.output_item.added (reasoning),
//     response.reasoning_text.delta…, response.reasoning_text.done,
//     response.output_item.done;
//   per text run: response.output_item.added (message),
//     response.content_part.added, response.output_text.delta…,
//     response.output_text.done, response.content_part.done,
//     response.output_item.done;
//   per tool call (whole): response.output_item.added (function_call),
//     response.function_call_arguments.delta, …arguments.done,
//     response.output_item.done;
//   then response.completed (or response.incomplete at max_output_tokens)
//   with the whole response and usage. An error after the stream started is
//   response.failed with {"error": {"code", "message"}}.
// One encoder per response, used by one thread at a time.
#pragma once

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "router/gateway/generation_result.h"
#include "router/gateway/responses_api.h"
#include "router/gateway/stream_encoder.h"

namespace kvmesh::router::gateway {

class ResponsesStreamEncoder : public StreamEncoder {
 public:
  // Called once with the finished response object and the generation (to
  // store it), before the closing event is sent.
  using OnComplete =
      std::function<void(const nlohmann::ordered_json& response, const GenerationResult& result)>;

  ResponsesStreamEncoder(ResponseMeta meta, std::shared_ptr<const ResponsesRequest> request,
                         OnComplete on_complete)
      : meta_(std::move(meta)),
        request_(std::move(request)),
        on_complete_(std::move(on_complete)) {}

  std::string Encode(const v1::GenerateTextResponse& message) override;
  std::string Finish(const Status& status) override;
  std::string KeepAlive() override { return ": keep-alive\n\n"; }

 private:
  enum class Open { kNone, kReasoning, kText };

  std::string Event(nlohmann::ordered_json event);
  std::string Start();
  std::string OpenItem(Open kind);
  std::string CloseItem();
  std::string ToolCall(const v1::ToolCall& call);
  std::string ItemId(std::string_view prefix) const;

  ResponseMeta meta_;
  std::shared_ptr<const ResponsesRequest> request_;
  OnComplete on_complete_;
  GenerationResult result_;
  nlohmann::ordered_json output_ = nlohmann::ordered_json::array();  // closed items
  Open open_ = Open::kNone;
  nlohmann::ordered_json item_;                                        // the open item
  std::string text_;                                                   // its text so far
  nlohmann::ordered_json logprobs_ = nlohmann::ordered_json::array();  // of its tokens
  int64_t sequence_ = 0;
  bool started_ = false;
};

}  // namespace kvmesh::router::gateway
