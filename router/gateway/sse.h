// Server-sent events framing (the text/event-stream wire format both OpenAI and
// Anthropic stream in). Pure functions; safe from any thread.
#pragma once

#include <string>
#include <string_view>

namespace kvmesh::router::gateway {

// "data: <data>\n\n". A payload with line breaks becomes one data line per
// line, which SSE readers join back with "\n".
std::string SseData(std::string_view data);

// "event: <event>\ndata: <data>\n\n" (Anthropic names every event).
std::string SseEvent(std::string_view event, std::string_view data);

// ": <text>\n\n": a comment line every SSE reader ignores. The gateway sends
// one when a stream is idle, to keep proxies from closing it and to notice a
// client that went away.
std::string SseComment(std::string_view text);

// OpenAI's end-of-stream marker.
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

}  // namespace kvmesh::router::gateway
