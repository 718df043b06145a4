// Which served model a requested model name means.
//
// Clients ask for the names they know: Claude Code asks for `claude-…`,
// OpenAI SDK examples for `gpt-…`. A router resolves a requested name by:
//   1. a served model of exactly that name;
//   2. the first alias whose pattern matches (`--model-alias PATTERN=MODEL`,
//      `*` matching any run of characters), when MODEL is served;
//   3. otherwise, when exactly one model is served and names are not strict
//      (`--strict-model-names` off), that model.
// An empty name means the only model. Errors name the requested name and the
// served ones (NOT_FOUND), or the several models when one must be named.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kvmesh::router {

struct ModelAlias {
  std::string pattern;  // e.g. "claude-*"
  std::string model;    // a served model's name
};

// "claude-*=qwen3" → {"claude-*", "qwen3"}; errors name the entry.
StatusOr<ModelAlias> ParseModelAlias(std::string_view text);

// Whether `name` matches `pattern`, where `*` matches any run (also empty).
bool MatchesPattern(std::string_view pattern, std::string_view name);

StatusOr<std::string> ResolveModelName(const std::string& requested,
                                       const std::vector<std::string>& served,
                                       const std::vector<ModelAlias>& aliases, bool strict);

}  // namespace kvmesh::router
