// The grammar of a forced tool call (tool_choice "required" or a named
// tool) in the model's own tool-call format (assistant_output.h), with each
// tool's arguments constrained to its parameter schema: what the model then
// writes is a call the router parses, whose arguments validate.
//
//   hermes-json, xml-function  <tool_call>\n{"name": "N", "arguments": ARGS}\n</tool_call>
//                              (the xml-function parser takes JSON too)
//   llama3-json                {"name": "N", "parameters": ARGS}
//   mistral                    [TOOL_CALLS]N[ARGS]ARGS
//   none                       as hermes-json (the router then parses that)
//
// Pure functions; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "common/status.h"
#include "router/chat/assistant_output.h"

namespace kvmesh::router {

// `tools` in the templates' format; `only` names the one tool allowed (empty:
// any of them). INVALID_ARGUMENT when `only` is not offered or a schema is
// outside the supported subset (the message names the tool).
StatusOr<std::string> ToolCallGrammar(ToolCallFormat format, const nlohmann::ordered_json& tools,
                                      std::string_view only);

// The format a forced call is written in: the model's, or hermes-json when
// its template teaches none.
ToolCallFormat ForcedCallFormat(ToolCallFormat format);

}  // namespace kvmesh::router
