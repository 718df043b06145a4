#include "router/request_text_log.h"

#include <cstdio>

#include "common/log.h"
#include "common/tokenizer/tokenizer.h"

namespace kvmesh::router {

std::string QuotedLogText(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", u);
      out += hex;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

RequestTextLog::RequestTextLog(bool on, std::string_view request_id, const Tokenizer* tokenizer,
                               std::span<const int32_t> prompt, const MessageCallback& client)
    : on_(on), request_id_(request_id), client_(client) {
  if (!on_) return;
  std::string text;
  if (tokenizer != nullptr) {
    text = QuotedLogText(tokenizer->Decode(prompt, false, /*render_special=*/true));
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
            ": " + QuotedLogText(text));
  }
}

}  // namespace kvmesh::router
