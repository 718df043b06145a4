// The conventions of ../shared/chat-templates/render_reference.py, the
// Python Jinja2 oracle the engine is checked against: the variables a case
// renders with (placeholder special tokens, messages, add_generation_prompt,
// tools, extras) and its fixed clock. Used by the golden test and by
// `kvmesh chat-template render`.
#pragma once

#include <ctime>
#include <nlohmann/json.hpp>

#include "common/jinja/jinja.h"

namespace kvmesh::jinja {

// 2026-01-15 09:30:00, a Thursday.
inline std::tm ReferenceNow() {
  std::tm tm{};
  tm.tm_year = 2026 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  tm.tm_hour = 9;
  tm.tm_min = 30;
  tm.tm_wday = 4;
  tm.tm_yday = 14;
  return tm;
}

// A case {"id", "messages", "add_generation_prompt", "tools"?, "extra"?} as
// the reference's template variables.
inline nlohmann::ordered_json ReferenceVariables(const nlohmann::ordered_json& c) {
  nlohmann::ordered_json v = {{"bos_token", "<BOS>"},
                              {"eos_token", "<EOS>"},
                              {"pad_token", "<PAD>"},
                              {"unk_token", "<UNK>"}};
  v["messages"] = c.value("messages", nlohmann::ordered_json::array());
  v["add_generation_prompt"] = c.value("add_generation_prompt", false);
  if (c.contains("tools")) v["tools"] = c["tools"];
  if (c.contains("extra") && c["extra"].is_object()) {
    for (auto it = c["extra"].begin(); it != c["extra"].end(); ++it) v[it.key()] = it.value();
  }
  return v;
}

}  // namespace kvmesh::jinja
