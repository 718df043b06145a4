#include "router/request_text_log.h"

#include "common/log.h"
#include "common/tokenizer/tokenizer.h"

namespace kvmesh::router {

RequestTextLog::RequestTextLog(bool on, std::string_view request_id, const Tokenizer* tokenizer,
                               std::span<const int32_t> prompt, const MessageCallback& client)
    : on_(on), request_id_(request_id), client_(client) {
  if (!on_) return;
  std::string text;
  if (tokenizer != nullptr) {
    text = QuotedText(tokenizer->Decode(prompt, false, /*render_special=*/true));
  } else {
    for (const int32_t id : prompt) text += (text.empty() ? "[" : ",") + std::to_string(id);
    text += ']';
  }
  Log(LogLevel::kInfo, "router",
      "request " + request_id_ + " prompt (" + std::to_string(prompt.size()) + " tokens): " + text);
  recording_ = [this](const v1::GenerateTextResponse& message) {
    outputs_[message.choice()] += message.text();
    return client_(message);
  };
}

RequestTextLog::~RequestTextLog() {
  if (!on_) return;
  if (outputs_.empty()) {
    Log(LogLevel::kInfo, "router", "request " + request_id_ + " output: none");
    return;
  }
  for (const auto& [choice, text] : outputs_) {
    Log(LogLevel::kInfo, "router",
        "request " + request_id_ + " output" +
            (outputs_.size() > 1 ? " (choice " + std::to_string(choice) + ")" : std::string()) +
            ": " + QuotedText(text));
  }
}

}  // namespace kvmesh::router
