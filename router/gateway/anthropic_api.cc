#include "router/gateway/anthropic_api.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "router/gateway/json_fields.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

std::string IndexedPath(std::string_view base, size_t index) {
  std::string path(base);
  path += '[';
  path += std::to_string(index);
  path += ']';
  return path;
}

Status NotAnObject(const std::string& path, const json& value) {
  std::string message = "field \"";
  message += path;
  message += "\" must be an object, got ";
  message += JsonTypeName(value);
  return InvalidArgumentError(std::move(message));
}

// `content` of a message, or `system`: a string or an array of text blocks,
// joined with "\n".
Status ParseTextBlocks(const JsonObjectReader& parent, std::string_view key, std::string* text) {
  const json* value = parent.Find(key);
  if (value == nullptr) return Status::Ok();
  if (value->is_string()) {
    *text = value->get<std::string>();
    return Status::Ok();
  }
  if (!value->is_array()) return parent.TypeError(key, "a string or an array of content blocks");
  for (size_t i = 0; i < value->size(); ++i) {
    const json& block = (*value)[i];
    std::string path = IndexedPath(parent.FieldName(key), i);
    if (!block.is_object()) return NotAnObject(path, block);
    JsonObjectReader reader(block, path);
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    if (type != "text") {
      return reader.ValueError("type", "must be \"text\" (kvmesh serves text only)",
                               block.contains("type") ? block["type"] : json(nullptr));
    }
    std::string block_text;
    RETURN_IF_ERROR(reader.String("text", &block_text));
    if (i > 0) *text += '\n';
    *text += block_text;
  }
  return Status::Ok();
}

Status ParseMessages(const JsonObjectReader& body, v1::ChatRequest* request) {
  const json* messages = body.Find("messages");
  if (messages == nullptr) return body.Missing("messages");
  if (!messages->is_array()) return body.TypeError("messages", "an array of messages");
  if (messages->empty()) return body.ValueError("messages", "must not be empty", *messages);
  for (size_t i = 0; i < messages->size(); ++i) {
    const json& item = (*messages)[i];
    std::string path = IndexedPath("messages", i);
    if (!item.is_object()) return NotAnObject(path, item);
    JsonObjectReader message(item, path);
    std::string role;
    RETURN_IF_ERROR(message.String("role", &role));
    if (role.empty()) return message.Missing("role");
    // Claude Code sends system-role messages inside `messages` too; they
    // reach the chat template as system messages where they stand.
    if (role != "user" && role != "assistant" && role != "system") {
      return message.ValueError("role", "must be user, assistant or system", item["role"]);
    }
    if (message.Find("content") == nullptr) return message.Missing("content");
    v1::ChatMessage* out = request->add_messages();
    out->set_role(std::move(role));
    RETURN_IF_ERROR(ParseTextBlocks(message, "content", out->mutable_content()));
  }
  return Status::Ok();
}

Status ParseSampling(const JsonObjectReader& body, v1::GenerationOptions* options) {
  v1::SamplingParams* sampling = options->mutable_sampling();
  std::optional<double> number;
  RETURN_IF_ERROR(body.NumberInRange("temperature", 0, 1, &number));
  if (number.has_value()) sampling->set_temperature(static_cast<float>(*number));
  number.reset();
  RETURN_IF_ERROR(body.NumberInRange("top_p", 0, 1, &number));
  if (number.has_value()) sampling->set_top_p(static_cast<float>(*number));
  std::optional<int64_t> top_k;
  RETURN_IF_ERROR(body.IntegerInRange("top_k", 0, kMaxInt32, &top_k));
  if (top_k.has_value()) sampling->set_top_k(static_cast<int32_t>(*top_k));

  const json* stops = body.Find("stop_sequences");
  if (stops != nullptr) {
    if (!stops->is_array()) return body.TypeError("stop_sequences", "an array of strings");
    for (const json& stop : *stops) {
      if (!stop.is_string()) return body.TypeError("stop_sequences", "an array of strings");
      if (stop.get_ref<const std::string&>().empty()) {
        return body.ValueError("stop_sequences", "must not contain empty strings", *stops);
      }
      options->add_stop(stop.get<std::string>());
    }
  }
  return Status::Ok();
}

// Anthropic tools ({name, description, input_schema}) in the chat templates'
// format ({type: function, function: {name, description, parameters}}).
Status ParseTools(const JsonObjectReader& body, v1::ChatRequest* request) {
  const json* tools = body.Find("tools");
  if (tools == nullptr || tools->is_null()) return Status::Ok();
  if (!tools->is_array()) return body.TypeError("tools", "an array of tools");
  if (const json* choice = body.Find("tool_choice"); choice != nullptr && !choice->is_null()) {
    if (!choice->is_object()) return body.TypeError("tool_choice", "an object");
    JsonObjectReader reader(*choice, "tool_choice");
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    if (type == "none") return Status::Ok();  // offered to no one: not rendered
    if (type != "auto") {
      return reader.ValueError(
          "type",
          "must be \"auto\" or \"none\" (forcing a call, \"any\" or \"tool\", needs "
          "constrained decoding, which kvmesh does not have yet)",
          (*choice)["type"]);
    }
  }
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& tool = (*tools)[i];
    const std::string path = IndexedPath("tools", i);
    if (!tool.is_object()) return NotAnObject(path, tool);
    JsonObjectReader reader(tool, path);
    std::string name, description, type;
    RETURN_IF_ERROR(reader.String("name", &name));
    if (name.empty()) return reader.Missing("name");
    RETURN_IF_ERROR(reader.String("description", &description));
    RETURN_IF_ERROR(reader.String("type", &type));
    ordered_json function = {{"name", name}};
    if (!description.empty()) function["description"] = description;
    if (const json* schema = reader.Find("input_schema"); schema != nullptr) {
      if (!schema->is_object()) return reader.TypeError("input_schema", "an object");
      function["parameters"] = ordered_json::parse(schema->dump());
    } else if (type.empty() || type == "custom") {
      return reader.Missing("input_schema");
    }
    out.push_back({{"type", "function"}, {"function", std::move(function)}});
  }
  if (!out.empty()) request->set_tools_json(out.dump());
  return Status::Ok();
}

// Fields Claude Code and the SDKs send that change nothing here: accepted
// when they have their documented shape, and ignored.
Status CheckIgnoredFields(const JsonObjectReader& body) {
  for (const char* key : {"thinking", "metadata", "context_management", "output_config"}) {
    if (const json* v = body.Find(key); v != nullptr && !v->is_object() && !v->is_null()) {
      return body.TypeError(key, "an object");
    }
  }
  if (const json* tier = body.Find("service_tier"); tier != nullptr && !tier->is_string()) {
    return body.TypeError("service_tier", "a string");
  }
  return Status::Ok();
}

bool IsVolatile(std::string_view text, const std::vector<std::string>& prefixes) {
  for (const std::string& p : prefixes) {
    if (!p.empty() && text.substr(0, p.size()) == p) return true;
  }
  return false;
}

// The system prompt without its volatile blocks (or, for a string, its
// leading volatile lines).
Status ParseSystem(const JsonObjectReader& body, const AnthropicParseOptions& options,
                   std::string* system) {
  const json* value = body.Find("system");
  if (value != nullptr && value->is_array() && !options.volatile_prefixes.empty()) {
    json kept = json::array();
    for (const json& block : *value) {
      const bool text_block = block.is_object() && block.value("type", "") == "text" &&
                              block.contains("text") && block["text"].is_string();
      if (text_block &&
          IsVolatile(block["text"].get_ref<const std::string&>(), options.volatile_prefixes)) {
        continue;
      }
      kept.push_back(block);
    }
    json wrapper = {{"system", std::move(kept)}};
    JsonObjectReader reader(wrapper, "");
    return ParseTextBlocks(reader, "system", system);
  }
  RETURN_IF_ERROR(ParseTextBlocks(body, "system", system));
  while (!options.volatile_prefixes.empty() && IsVolatile(*system, options.volatile_prefixes)) {
    const size_t nl = system->find('\n');
    system->erase(0, nl == std::string::npos ? system->size() : nl + 1);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<AnthropicMessagesRequest> ParseAnthropicMessagesRequest(
    const json& body, const AnthropicParseOptions& options) {
  JsonObjectReader reader(body, "");
  AnthropicMessagesRequest parsed;
  v1::ChatRequest& request = parsed.request;
  RETURN_IF_ERROR(reader.String("model", request.mutable_model()));

  std::optional<int64_t> max_tokens;
  RETURN_IF_ERROR(reader.IntegerInRange("max_tokens", 1, kMaxInt32, &max_tokens));
  if (!max_tokens.has_value()) return reader.Missing("max_tokens");
  request.mutable_options()->set_max_tokens(static_cast<int32_t>(*max_tokens));

  std::string system;
  RETURN_IF_ERROR(ParseSystem(reader, options, &system));
  if (!system.empty()) {
    v1::ChatMessage* message = request.add_messages();
    message->set_role("system");
    message->set_content(std::move(system));
  }
  RETURN_IF_ERROR(ParseMessages(reader, &request));
  RETURN_IF_ERROR(ParseTools(reader, &request));
  RETURN_IF_ERROR(CheckIgnoredFields(reader));
  RETURN_IF_ERROR(ParseSampling(reader, request.mutable_options()));
  RETURN_IF_ERROR(reader.Bool("stream", &parsed.stream));
  return parsed;
}

std::string_view AnthropicStopReason(v1::FinishReason reason, std::string_view stop_sequence) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH:
    case v1::FINISH_REASON_CONTEXT:
      return "max_tokens";
    case v1::FINISH_REASON_STOP:
      return stop_sequence.empty() ? "end_turn" : "stop_sequence";
    default:
      return "end_turn";
  }
}

ordered_json AnthropicStopSequence(std::string_view stop_sequence) {
  if (stop_sequence.empty()) return nullptr;
  return std::string(stop_sequence);
}

ordered_json AnthropicUsageJson(const v1::Usage& usage) {
  uint32_t cached = std::min(usage.cached_tokens(), usage.prompt_tokens());
  ordered_json out;
  out["input_tokens"] = usage.prompt_tokens() - cached;
  out["cache_creation_input_tokens"] = 0;
  out["cache_read_input_tokens"] = cached;
  out["output_tokens"] = usage.completion_tokens();
  return out;
}

ordered_json AnthropicMessageJson(const ResponseMeta& meta, const GenerationResult& result) {
  ordered_json block;
  block["type"] = "text";
  block["text"] = result.text;
  ordered_json out;
  out["id"] = meta.id;
  out["type"] = "message";
  out["role"] = "assistant";
  out["model"] = meta.model;
  out["content"] = ordered_json::array({std::move(block)});
  out["stop_reason"] = AnthropicStopReason(result.finish_reason, result.stop_sequence);
  out["stop_sequence"] = AnthropicStopSequence(result.stop_sequence);
  out["usage"] = AnthropicUsageJson(result.usage);
  return out;
}

}  // namespace kvmesh::router::gateway
