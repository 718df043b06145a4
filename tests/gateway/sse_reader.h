// Test helper: splits a text/event-stream body into its events, as an SSE
// client does (comment lines dropped, data lines joined with "\n").
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvmesh::router::testing {

struct SseMessage {
  std::string event;  // empty when the event has no name
  std::string data;
};

inline std::vector<SseMessage> ParseSse(std::string_view body) {
  std::vector<SseMessage> messages;
  SseMessage current;
  bool has_data = false;
  while (!body.empty()) {
    size_t end = body.find('\n');
    std::string_view line = body.substr(0, end);
    body.remove_prefix(end == std::string_view::npos ? body.size() : end + 1);
    if (line.empty()) {
      if (has_data) messages.push_back(current);
      current = SseMessage();
      has_data = false;
    } else if (line.rfind("event: ", 0) == 0) {
      current.event = std::string(line.substr(7));
    } else if (line.rfind("data: ", 0) == 0) {
      if (has_data) current.data += '\n';
      current.data += line.substr(6);
      has_data = true;
    }
  }
  return messages;
}

}  // namespace kvmesh::router::testing
