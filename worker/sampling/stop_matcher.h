// StopMatcher: finds stop strings in streamed text without ever emitting text
// that turns out to be the start of a stop string.
//
// Text arrives in arbitrary pieces (token by token). Push() returns the part
// that is safe to show now: everything except a tail that could still grow
// into a stop string. When a stop string completes, the text before it is
// returned, stopped() turns true and everything after is discarded. One
// matcher per request; not thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kvmesh {

class StopMatcher {
 public:
  explicit StopMatcher(std::vector<std::string> stops) : stops_(std::move(stops)) {}

  std::string Push(std::string_view text);
  // Returns whatever was held back (call once the generation ends otherwise).
  std::string Flush();

  bool stopped() const { return stopped_; }
  const std::string& matched() const { return matched_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  bool stopped_ = false;
  std::string matched_;
};

}  // namespace kvmesh
