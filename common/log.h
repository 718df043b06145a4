// Minimal leveled logging to stderr, safe from any thread. The level can be
// changed at run time (the worker's Admin service does).
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace kvmesh {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };

void SetLogLevel(LogLevel level);
LogLevel GetLogLevel();
// "debug", "info", "warning"/"warn", "error"; false for anything else.
bool ParseLogLevel(std::string_view name, LogLevel* out);
std::string_view LogLevelName(LogLevel level);

// Writes "2026-11-30T03:44:30.123Z I component: message" when `level` is on.
void Log(LogLevel level, std::string_view component, std::string_view message);

// `text` quoted on one line, for logs and messages: quotes and backslashes
// escaped, a newline as \n, other control bytes as \xNN; past `max_bytes`
// bytes, "..." ends it.
std::string QuotedText(std::string_view text, size_t max_bytes = std::string_view::npos);

}  // namespace kvmesh
