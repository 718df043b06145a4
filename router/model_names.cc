#include "router/model_names.h"

#include <algorithm>

namespace kvmesh::router {

StatusOr<ModelAlias> ParseModelAlias(std::string_view text) {
  const size_t eq = text.find('=');
  if (eq == std::string_view::npos || eq == 0 || eq + 1 == text.size()) {
    return InvalidArgumentError("model alias \"" + std::string(text) +
                                "\" is not PATTERN=MODEL (e.g. claude-*=qwen3)");
  }
  return ModelAlias{std::string(text.substr(0, eq)), std::string(text.substr(eq + 1))};
}

bool MatchesPattern(std::string_view pattern, std::string_view name) {
  // Greedy glob with backtracking to the last '*'.
  size_t p = 0, n = 0, star = std::string_view::npos, mark = 0;
  while (n < name.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = n;
    } else if (p < pattern.size() && pattern[p] == name[n]) {
      ++p;
      ++n;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      n = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

StatusOr<std::string> ResolveModelName(const std::string& requested,
                                       const std::vector<std::string>& served,
                                       const std::vector<ModelAlias>& aliases, bool strict) {
  auto list = [&] {
    std::string names;
    for (const std::string& n : served) names += (names.empty() ? "" : ", ") + n;
    return names.empty() ? std::string("none yet") : names;
  };
  if (served.empty()) return UnavailableError("no worker has reported a model yet");
  if (requested.empty()) {
    if (served.size() == 1) return served[0];
    return InvalidArgumentError("several models are served (" + list() + "); name one");
  }
  if (std::find(served.begin(), served.end(), requested) != served.end()) return requested;
  for (const ModelAlias& a : aliases) {
    if (MatchesPattern(a.pattern, requested) &&
        std::find(served.begin(), served.end(), a.model) != served.end()) {
      return a.model;
    }
  }
  if (!strict && served.size() == 1) return served[0];
  return NotFoundError("model \"" + requested + "\" is not served here (models: " + list() +
                       (strict ? "; names are strict" : "") + ")");
}

}  // namespace kvmesh::router
