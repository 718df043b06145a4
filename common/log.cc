#include "common/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace kvmesh {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kInfo)};
std::mutex g_write_mu;

}  // namespace

void SetLogLevel(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel GetLogLevel() { return static_cast<LogLevel>(g_level.load()); }

bool ParseLogLevel(std::string_view name, LogLevel* out) {
  if (name == "debug") {
    *out = LogLevel::kDebug;
  } else if (name == "info") {
    *out = LogLevel::kInfo;
  } else if (name == "warning" || name == "warn") {
    *out = LogLevel::kWarning;
  } else if (name == "error") {
    *out = LogLevel::kError;
  } else {
    return false;
  }
  return true;
}

std::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarning:
      return "warning";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

void Log(LogLevel level, std::string_view component, std::string_view message) {
  if (static_cast<int>(level) < g_level.load(std::memory_order_relaxed)) return;
  const auto now = std::chrono::system_clock::now();
  const std::time_t secs = std::chrono::system_clock::to_time_t(now);
  const int ms = static_cast<int>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%S", &tm);
  static const char kLetters[] = "DIWE";
  std::lock_guard<std::mutex> lock(g_write_mu);
  std::fprintf(stderr, "%s.%03dZ %c %.*s: %.*s\n", stamp, ms, kLetters[static_cast<int>(level)],
               static_cast<int>(component.size()), component.data(),
               static_cast<int>(message.size()), message.data());
}

std::string QuotedText(std::string_view text, size_t max_bytes) {
  std::string out = "\"";
  size_t n = 0;
  for (const char c : text) {
    if (n++ == max_bytes) {
      out += "...";
      break;
    }
    const auto uc = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (uc < 0x20) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", uc);
      out += hex;
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

}  // namespace kvmesh
