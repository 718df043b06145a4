#include "router/gateway/responses_stream.h"

#include "router/gateway/http_errors.h"
#include "router/gateway/openai_logprobs.h"
#include "router/gateway/sse.h"

namespace kvmesh::router::gateway {

using nlohmann::ordered_json;

std::string ResponsesStreamEncoder::Event(ordered_json event) {
  event["sequence_number"] = sequence_++;
  const std::string type = event["type"].get<std::string>();
  return SseEvent(type, ToJsonText(event));
}

std::string ResponsesStreamEncoder::ItemId(std::string_view prefix) const {
  return std::string(prefix) + meta_.id + "_" + std::to_string(output_.size());
}

std::string ResponsesStreamEncoder::Start() {
  started_ = true;
  const ordered_json response =
      ResponseJson(meta_, *request_, ordered_json::array(), v1::FINISH_REASON_UNSPECIFIED, nullptr);
  std::string out = Event({{"type", "response.created"}, {"response", response}});
  out += Event({{"type", "response.in_progress"}, {"response", response}});
  return out;
}

std::string ResponsesStreamEncoder::OpenItem(Open kind) {
  if (open_ == kind) return "";
  std::string out = CloseItem();
  open_ = kind;
  text_.clear();
  logprobs_ = ordered_json::array();
  const size_t index = output_.size();
  if (kind == Open::kReasoning) {
    item_ = {{"id", ItemId("rs_")},
             {"type", "reasoning"},
             {"summary", ordered_json::array()},
             {"content", ordered_json::array()}};
    out +=
        Event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item_}});
  } else {
    item_ = {{"id", ItemId("msg_")},
             {"type", "message"},
             {"status", "in_progress"},
             {"role", "assistant"},
             {"content", ordered_json::array()}};
    out +=
        Event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item_}});
    out +=
        Event({{"type", "response.content_part.added"},
               {"item_id", item_["id"]},
               {"output_index", index},
               {"content_index", 0},
               {"part",
                {{"type", "output_text"}, {"text", ""}, {"annotations", ordered_json::array()}}}});
  }
  return out;
}

std::string ResponsesStreamEncoder::CloseItem() {
  if (open_ == Open::kNone) return "";
  const size_t index = output_.size();
  std::string out;
  if (open_ == Open::kReasoning) {
    out += Event({{"type", "response.reasoning_text.done"},
                  {"item_id", item_["id"]},
                  {"output_index", index},
                  {"content_index", 0},
                  {"text", text_}});
    item_["content"] = ordered_json::array({{{"type", "reasoning_text"}, {"text", text_}}});
    item_["encrypted_content"] = EncodeReasoning(text_);
  } else {
    ordered_json part = {{"type", "output_text"},
                         {"text", text_},
                         {"annotations", ordered_json::array()},
                         {"logprobs", logprobs_}};
    out += Event({{"type", "response.output_text.done"},
                  {"item_id", item_["id"]},
                  {"output_index", index},
                  {"content_index", 0},
                  {"text", text_},
                  {"logprobs", logprobs_}});
    out += Event({{"type", "response.content_part.done"},
                  {"item_id", item_["id"]},
                  {"output_index", index},
                  {"content_index", 0},
                  {"part", part}});
    item_["status"] = "completed";
    item_["content"] = ordered_json::array({std::move(part)});
  }
  out += Event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item_}});
  output_.push_back(std::move(item_));
  item_ = nullptr;
  open_ = Open::kNone;
  return out;
}

std::string ResponsesStreamEncoder::ToolCall(const v1::ToolCall& call) {
  std::string out = CloseItem();
  const size_t index = output_.size();
  ordered_json item = {{"id", ItemId("fc_")},  {"type", "function_call"}, {"status", "in_progress"},
                       {"call_id", call.id()}, {"name", call.name()},     {"arguments", ""}};
  out += Event({{"type", "response.output_item.added"}, {"output_index", index}, {"item", item}});
  out += Event({{"type", "response.function_call_arguments.delta"},
                {"item_id", item["id"]},
                {"output_index", index},
                {"delta", call.arguments_json()}});
  out += Event({{"type", "response.function_call_arguments.done"},
                {"item_id", item["id"]},
                {"output_index", index},
                {"name", call.name()},
                {"arguments", call.arguments_json()}});
  item["status"] = "completed";
  item["arguments"] = call.arguments_json();
  out += Event({{"type", "response.output_item.done"}, {"output_index", index}, {"item", item}});
  output_.push_back(std::move(item));
  return out;
}

std::string ResponsesStreamEncoder::Encode(const v1::GenerateTextResponse& message) {
  result_.Add(message);
  std::string out = started_ ? "" : Start();
  if (!message.reasoning().empty()) {
    out += OpenItem(Open::kReasoning);
    text_ += message.reasoning();
    out += Event({{"type", "response.reasoning_text.delta"},
                  {"item_id", item_["id"]},
                  {"output_index", output_.size()},
                  {"content_index", 0},
                  {"delta", message.reasoning()}});
  }
  if (!message.text().empty()) {
    out += OpenItem(Open::kText);
    text_ += message.text();
    ordered_json event = {{"type", "response.output_text.delta"},
                          {"item_id", item_["id"]},
                          {"output_index", output_.size()},
                          {"content_index", 0},
                          {"delta", message.text()}};
    event["logprobs"] = ChatLogprobEntries({message.logprobs().begin(), message.logprobs().end()});
    for (const auto& entry : event["logprobs"]) logprobs_.push_back(entry);
    out += Event(std::move(event));
  }
  for (const v1::ToolCall& call : message.tool_calls()) out += ToolCall(call);
  return out;
}

std::string ResponsesStreamEncoder::Finish(const Status& status) {
  std::string out = started_ ? "" : Start();
  if (!status.ok()) {
    ordered_json response =
        ResponseJson(meta_, *request_, output_, v1::FINISH_REASON_STOP, nullptr);
    response["status"] = "failed";
    response["error"] = {
        {"code", HttpStatusFor(status.code()) == 429 ? "rate_limit_exceeded" : "server_error"},
        {"message", status.message()}};
    out += Event({{"type", "response.failed"}, {"response", std::move(response)}});
    return out;
  }
  // A generation that wrote nothing still answers with an (empty) message.
  if (output_.empty() && open_ == Open::kNone) out += OpenItem(Open::kText);
  out += CloseItem();
  const v1::FinishReason finish = result_.finish_reason == v1::FINISH_REASON_UNSPECIFIED
                                      ? v1::FINISH_REASON_STOP
                                      : result_.finish_reason;
  const v1::Usage usage = result_.total_usage();
  ordered_json response = ResponseJson(meta_, *request_, output_, finish, &usage);
  if (on_complete_) on_complete_(response, result_);
  const bool incomplete = response["status"] == "incomplete";
  out += Event({{"type", incomplete ? "response.incomplete" : "response.completed"},
                {"response", std::move(response)}});
  return out;
}

}  // namespace kvmesh::router::gateway
