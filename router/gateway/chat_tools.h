// Tool use shared by the OpenAI and Anthropic front doors: naming tool
// results after the calls they answer, and reading a call's arguments back
// as an object. Pure functions; safe from any thread.
#pragma once

#include <nlohmann/json.hpp>

#include "kvmesh/v1/inference.pb.h"

namespace kvmesh::router::gateway {

// Gives every "tool" message without a name the name of the assistant tool
// call whose id it answers (both APIs identify results by id only; some
// templates show the tool's name with its result).
void NameToolResults(v1::ChatRequest* request);

// A call's arguments as a JSON object ({} when they do not parse, which the
// router never produces).
nlohmann::ordered_json ToolCallArguments(const v1::ToolCall& call);

}  // namespace kvmesh::router::gateway
