#include "router/gateway/chat_tools.h"

#include <string>
#include <unordered_map>

namespace kvmesh::router::gateway {

void NameToolResults(v1::ChatRequest* request) {
  std::unordered_map<std::string, std::string> names;
  for (v1::ChatMessage& message : *request->mutable_messages()) {
    for (const v1::ToolCall& call : message.tool_calls()) names[call.id()] = call.name();
    if (message.role() != "tool" || !message.name().empty()) continue;
    if (auto it = names.find(message.tool_call_id()); it != names.end()) {
      message.set_name(it->second);
    }
  }
}

nlohmann::ordered_json ToolCallArguments(const v1::ToolCall& call) {
  auto arguments =
      nlohmann::ordered_json::parse(call.arguments_json(), nullptr, /*allow_exceptions=*/false);
  if (!arguments.is_object()) return nlohmann::ordered_json::object();
  return arguments;
}

}  // namespace kvmesh::router::gateway
