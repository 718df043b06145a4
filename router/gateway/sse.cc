#include "router/gateway/sse.h"

namespace kvmesh::router::gateway {
namespace {

// Appends `prefix` + line + "\n" for each line of `text` (split on "\n",
// "\r\n" or "\r", the line ends SSE recognises).
void AppendLines(std::string_view prefix, std::string_view text, std::string& out) {
  while (true) {
    size_t end = text.find_first_of("\r\n");
    out += prefix;
    out += text.substr(0, end);
    out += '\n';
    if (end == std::string_view::npos) return;
    size_t next = end + 1;
    if (text[end] == '\r' && next < text.size() && text[next] == '\n') ++next;
    text.remove_prefix(next);
  }
}

}  // namespace

std::string SseData(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 8);
  AppendLines("data: ", data, out);
  out += '\n';
  return out;
}

std::string SseEvent(std::string_view event, std::string_view data) {
  std::string out;
  out.reserve(event.size() + data.size() + 16);
  out += "event: ";
  out += event;
  out += '\n';
  AppendLines("data: ", data, out);
  out += '\n';
  return out;
}

std::string SseComment(std::string_view text) {
  std::string out;
  AppendLines(": ", text, out);
  out += '\n';
  return out;
}

}  // namespace kvmesh::router::gateway
