// libFuzzer target: the HTTP gateway's request parsing. The input is a
// request body; parsed once as the gateway parses every body
// (ParseJsonObject), it goes to the parser of each route:
//   POST /v1/completions             ParseOpenAiCompletionRequest
//   POST /v1/chat/completions        ParseOpenAiChatRequest
//   POST /v1/messages                ParseAnthropicMessagesRequest
//   POST /v1/messages/count_tokens   the same, max_tokens defaulted to 1
//   POST /v1/responses               ParseResponsesRequest, without and (when
//                                    the body names previous_response_id)
//                                    with a stored conversation
// A 400 is an ordinary answer. Besides crashes, uncaught exceptions and
// sanitizer reports, a finding is a request the gateway accepts but cannot
// send on: a proto that does not parse back from its wire form (a string
// field that is not UTF-8), or a Responses echo that nlohmann cannot dump.
// No server, sockets or InferenceCore: pure functions only.
#include <google/protobuf/message.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "kvmesh/v1/inference.pb.h"
#include "router/gateway/anthropic_api.h"
#include "router/gateway/json_fields.h"
#include "router/gateway/openai_api.h"
#include "router/gateway/responses_api.h"

namespace {

namespace gateway = kvmesh::router::gateway;

[[noreturn]] void Fail(std::string_view route, const std::string& what) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(route.size()), route.data(), what.c_str());
  std::abort();
}

// What the router would put on the wire to its core and workers must come
// back out of it unchanged.
void MustSurviveTheWire(const google::protobuf::Message& message, std::string_view route) {
  std::string wire;
  if (!message.SerializeToString(&wire)) Fail(route, "the parsed request does not serialize");
  std::unique_ptr<google::protobuf::Message> copy(message.New());
  if (!copy->ParseFromString(wire)) {
    Fail(route,
         "the parsed request does not parse back from its wire form (a string field "
         "that is not UTF-8?): " +
             message.ShortDebugString());
  }
}

// A conversation as the ResponseStore keeps one: what previous_response_id
// continues.
const std::vector<kvmesh::v1::ChatMessage>& StoredConversation() {
  static const auto* conversation = [] {
    auto* messages = new std::vector<kvmesh::v1::ChatMessage>(2);
    (*messages)[0].set_role("user");
    (*messages)[0].set_content("What is 2 + 2?");
    (*messages)[1].set_role("assistant");
    (*messages)[1].set_reasoning_content("Add them.");
    kvmesh::v1::ToolCall* call = (*messages)[1].add_tool_calls();
    call->set_id("call_1");
    call->set_name("add");
    call->set_arguments_json(R"({"a": 2, "b": 2})");
    return messages;
  }();
  return *conversation;
}

void ParseResponses(const nlohmann::json& body,
                    const std::vector<kvmesh::v1::ChatMessage>* previous) {
  constexpr std::string_view kRoute = "/v1/responses";
  kvmesh::StatusOr<gateway::ResponsesRequest> parsed =
      gateway::ParseResponsesRequest(body, previous);
  if (!parsed.ok()) return;
  MustSurviveTheWire(parsed->request, kRoute);
  for (const kvmesh::v1::ChatMessage& m : parsed->new_messages) MustSurviveTheWire(m, kRoute);
  try {
    (void)parsed->echo.dump();
  } catch (const nlohmann::json::exception& e) {
    Fail(kRoute, std::string("the response's echo of the request does not dump: ") + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  kvmesh::StatusOr<nlohmann::json> body = gateway::ParseJsonObject(text);
  if (!body.ok()) return 0;

  if (auto parsed = gateway::ParseOpenAiCompletionRequest(*body); parsed.ok()) {
    MustSurviveTheWire(parsed->request, "/v1/completions");
  }
  if (auto parsed = gateway::ParseOpenAiChatRequest(*body); parsed.ok()) {
    MustSurviveTheWire(parsed->request, "/v1/chat/completions");
  }
  if (auto parsed = gateway::ParseAnthropicMessagesRequest(*body); parsed.ok()) {
    MustSurviveTheWire(parsed->request, "/v1/messages");
  }
  if (!body->contains("max_tokens")) {  // count_tokens needs none (HandleCountTokens)
    nlohmann::json counted = *body;
    counted["max_tokens"] = 1;
    if (auto parsed = gateway::ParseAnthropicMessagesRequest(counted); parsed.ok()) {
      MustSurviveTheWire(parsed->request, "/v1/messages/count_tokens");
    }
  }
  ParseResponses(*body, nullptr);
  if (!gateway::PreviousResponseId(*body).empty()) ParseResponses(*body, &StoredConversation());
  return 0;
}
