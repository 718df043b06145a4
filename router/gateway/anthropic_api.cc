#include "router/gateway/anthropic_api.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "common/log.h"
#include "router/gateway/chat_tools.h"
#include "router/gateway/json_fields.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();

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

// A block's cache_control breakpoint, as a retention in seconds: the
// ephemeral type (the only one, and the default), "ttl" 5m (the default) or
// 1h. `ttl` keeps the largest
// seen; untouched without cache_control.
Status ParseCacheControl(const JsonObjectReader& block, uint32_t* ttl) {
  const json* control = block.Find("cache_control");
  if (control == nullptr) return Status::Ok();
  if (!control->is_object()) return block.TypeError("cache_control", "an object");
  JsonObjectReader reader(*control, block.FieldName("cache_control"));
  std::string type = "ephemeral", duration = "5m";
  RETURN_IF_ERROR(reader.String("type", &type));
  if (type != "ephemeral") {
    return reader.ValueError("type", "must be \"ephemeral\"",
                             control->contains("type") ? (*control)["type"] : json(nullptr));
  }
  RETURN_IF_ERROR(reader.String("ttl", &duration));
  uint32_t seconds = 0;
  if (duration == "5m") {
    seconds = 300;
  } else if (duration == "1h") {
    seconds = 3600;
  } else {
    return reader.ValueError("ttl", "must be \"5m\" or \"1h\"");
  }
  *ttl = std::max(*ttl, seconds);
  return Status::Ok();
}

// The largest cache_control retention among the objects of `array`.
Status ArrayCacheTtl(const json* array, std::string_view path, uint32_t* ttl) {
  if (array == nullptr || !array->is_array()) return Status::Ok();
  for (size_t i = 0; i < array->size(); ++i) {
    if (!(*array)[i].is_object()) continue;
    RETURN_IF_ERROR(ParseCacheControl(JsonObjectReader((*array)[i], IndexedPath(path, i)), ttl));
  }
  return Status::Ok();
}

// A tool_result's content: a string or text blocks, joined with "\n".
Status ParseToolResult(const JsonObjectReader& block, v1::ChatMessage* out) {
  RETURN_IF_ERROR(block.String("tool_use_id", out->mutable_tool_call_id()));
  if (out->tool_call_id().empty()) return block.Missing("tool_use_id");
  RETURN_IF_ERROR(ParseTextBlocks(block, "content", out->mutable_content()));
  bool is_error = false;
  RETURN_IF_ERROR(block.Bool("is_error", &is_error));
  // Templates have no place for the flag: the model reads it in the text.
  if (is_error) out->set_content("Error: " + out->content());
  return Status::Ok();
}

// One message's content blocks. A user message's tool_result blocks become
// "tool" messages (in their order, before the user's own text, as the
// templates expect results right after the calls); an assistant message's
// tool_use blocks become its tool calls and its thinking blocks its
// reasoning.
Status ParseContentBlocks(const JsonObjectReader& message, const std::string& role,
                          v1::ChatRequest* request) {
  const json& blocks = *message.Find("content");
  v1::ChatMessage own;
  own.set_role(role);
  bool own_has_content = false;
  for (size_t i = 0; i < blocks.size(); ++i) {
    const json& block = blocks[i];
    const std::string path = IndexedPath(message.FieldName("content"), i);
    if (!block.is_object()) return NotAnObject(path, block);
    JsonObjectReader reader(block, path);
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    uint32_t ttl = 0;
    RETURN_IF_ERROR(ParseCacheControl(reader, &ttl));
    if (ttl > 0 && type != "tool_result")
      own.set_cache_ttl_seconds(std::max(own.cache_ttl_seconds(), ttl));
    if (type == "text") {
      std::string text;
      RETURN_IF_ERROR(reader.String("text", &text));
      if (own_has_content) own.mutable_content()->push_back('\n');
      own.mutable_content()->append(text);
      own_has_content = true;
    } else if (type == "tool_use" && role == "assistant") {
      v1::ToolCall* call = own.add_tool_calls();
      RETURN_IF_ERROR(reader.String("id", call->mutable_id()));
      if (call->id().empty()) return reader.Missing("id");
      RETURN_IF_ERROR(reader.String("name", call->mutable_name()));
      if (call->name().empty()) return reader.Missing("name");
      const json* input = reader.Find("input");
      if (input != nullptr && !input->is_object()) return reader.TypeError("input", "an object");
      call->set_arguments_json(input == nullptr ? "{}" : input->dump());
    } else if (type == "thinking" && role == "assistant") {
      std::string thinking;
      RETURN_IF_ERROR(reader.String("thinking", &thinking));
      own.mutable_reasoning_content()->append(thinking);
    } else if (type == "redacted_thinking" && role == "assistant") {
      // Encrypted reasoning of another model: nothing a template can show.
    } else if (type == "tool_result" && role == "user") {
      v1::ChatMessage* result = request->add_messages();
      result->set_role("tool");
      result->set_cache_ttl_seconds(ttl);
      RETURN_IF_ERROR(ParseToolResult(reader, result));
    } else {
      return reader.ValueError("type",
                               role == "assistant"
                                   ? "must be text, thinking, redacted_thinking or tool_use in an "
                                     "assistant message (kvmesh serves text and tools)"
                                   : "must be text or tool_result in a user message (kvmesh "
                                     "serves text and tools)",
                               block.contains("type") ? block["type"] : json(nullptr));
    }
  }
  // A user message of tool results only adds no user turn of its own.
  if (own_has_content || own.tool_calls_size() > 0 || !own.reasoning_content().empty() ||
      blocks.empty()) {
    *request->add_messages() = std::move(own);
  }
  return Status::Ok();
}

Status ParseMessages(const JsonObjectReader& body, v1::ChatRequest* request) {
  const json* messages = body.Find("messages");
  if (messages == nullptr) return body.Missing("messages");
  if (!messages->is_array()) return body.TypeError("messages", "an array of messages");
  if (messages->empty()) return body.ValueError("messages", "must not be empty", *messages);
  RETURN_IF_ERROR(body.AtMost("messages", *messages, kMaxMessages));
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
      return message.ValueError("role", "must be user, assistant or system");
    }
    const json* content = message.Find("content");
    if (content == nullptr) return message.Missing("content");
    if (content->is_array() && role != "system") {
      RETURN_IF_ERROR(ParseContentBlocks(message, role, request));
      continue;
    }
    v1::ChatMessage* out = request->add_messages();
    out->set_role(std::move(role));
    RETURN_IF_ERROR(ParseTextBlocks(message, "content", out->mutable_content()));
  }
  NameToolResults(request);
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
  RETURN_IF_ERROR(body.AtMost("tools", *tools, kMaxTools));
  if (const json* choice = body.Find("tool_choice"); choice != nullptr && !choice->is_null()) {
    if (!choice->is_object()) return body.TypeError("tool_choice", "an object");
    JsonObjectReader reader(*choice, "tool_choice");
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    if (type == "none") return Status::Ok();  // offered to no one: not rendered
    bool ignored_disable_parallel = false;
    RETURN_IF_ERROR(reader.Bool("disable_parallel_tool_use", &ignored_disable_parallel));
    if (type == "any") {
      request->set_tool_choice("required");
    } else if (type == "tool") {
      std::string name;
      RETURN_IF_ERROR(reader.String("name", &name));
      if (name.empty()) return reader.Missing("name");
      request->set_tool_choice(name);
    } else if (type != "auto") {
      return reader.ValueError("type", "must be auto, any, tool or none");
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

// Logs, at debug, the request fields this gateway does not know (Anthropic
// adds fields often; an unknown one is accepted and ignored).
void LogUnknownFields(const json& body) {
  static constexpr std::string_view kKnown[] = {"model",          "max_tokens",
                                                "messages",       "system",
                                                "tools",          "tool_choice",
                                                "stop_sequences", "temperature",
                                                "top_p",          "top_k",
                                                "stream",         "metadata",
                                                "thinking",       "context_management",
                                                "output_config",  "service_tier"};
  if (GetLogLevel() > LogLevel::kDebug || !body.is_object()) return;
  for (const auto& [key, value] : body.items()) {
    if (std::find(std::begin(kKnown), std::end(kKnown), key) == std::end(kKnown)) {
      Log(LogLevel::kDebug, "gateway", "anthropic request field \"" + key + "\" is ignored");
    }
  }
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
      // Any block that is not a well-formed text block is kept, for
      // ParseTextBlocks to accept or reject with a message naming it.
      const bool text_block = block.is_object() && block.contains("type") &&
                              block["type"] == "text" && block.contains("text") &&
                              block["text"].is_string();
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
  uint32_t system_ttl = 0;
  RETURN_IF_ERROR(ArrayCacheTtl(reader.Find("system"), "system", &system_ttl));
  if (!system.empty()) {
    v1::ChatMessage* message = request.add_messages();
    message->set_role("system");
    message->set_content(std::move(system));
    message->set_cache_ttl_seconds(system_ttl);
  }
  RETURN_IF_ERROR(ParseMessages(reader, &request));
  RETURN_IF_ERROR(ParseTools(reader, &request));
  // Templates write the tools into the first turn: a breakpoint on them
  // covers the first message.
  uint32_t tools_ttl = 0;
  RETURN_IF_ERROR(ArrayCacheTtl(reader.Find("tools"), "tools", &tools_ttl));
  if (tools_ttl > 0 && request.messages_size() > 0) {
    v1::ChatMessage* first = request.mutable_messages(0);
    first->set_cache_ttl_seconds(std::max(first->cache_ttl_seconds(), tools_ttl));
  }
  RETURN_IF_ERROR(CheckIgnoredFields(reader));
  LogUnknownFields(body);
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
    case v1::FINISH_REASON_TOOL_CALLS:
      return "tool_use";
    default:
      return "end_turn";
  }
}

ordered_json AnthropicStopSequence(std::string_view stop_sequence) {
  if (stop_sequence.empty()) return nullptr;
  return std::string(stop_sequence);
}

ordered_json AnthropicUsageJson(const v1::Usage& usage) {
  const uint32_t cached = std::min(usage.cached_tokens(), usage.prompt_tokens());
  const uint32_t written = std::min(usage.cache_write_tokens(), usage.prompt_tokens() - cached);
  ordered_json out;
  out["input_tokens"] = usage.prompt_tokens() - cached - written;
  out["cache_creation_input_tokens"] = written;
  out["cache_read_input_tokens"] = cached;
  out["output_tokens"] = usage.completion_tokens();
  return out;
}

ordered_json AnthropicThinkingBlock(std::string_view thinking) {
  ordered_json block;
  block["type"] = "thinking";
  block["thinking"] = std::string(thinking);
  block["signature"] = "";
  return block;
}

ordered_json AnthropicTextBlock(std::string_view text) {
  ordered_json block;
  block["type"] = "text";
  block["text"] = std::string(text);
  return block;
}

ordered_json AnthropicToolUseBlock(const v1::ToolCall& call, bool with_input) {
  ordered_json block;
  block["type"] = "tool_use";
  block["id"] = call.id();
  block["name"] = call.name();
  block["input"] = with_input ? ToolCallArguments(call) : ordered_json::object();
  return block;
}

ordered_json AnthropicMessageJson(const ResponseMeta& meta, const GenerationResult& result) {
  ordered_json content = ordered_json::array();
  if (!result.reasoning.empty()) content.push_back(AnthropicThinkingBlock(result.reasoning));
  if (!result.text.empty() || result.tool_calls.empty()) {
    content.push_back(AnthropicTextBlock(result.text));
  }
  for (const v1::ToolCall& call : result.tool_calls) {
    content.push_back(AnthropicToolUseBlock(call, /*with_input=*/true));
  }
  ordered_json out;
  out["id"] = meta.id;
  out["type"] = "message";
  out["role"] = "assistant";
  out["model"] = meta.model;
  out["content"] = std::move(content);
  out["stop_reason"] = AnthropicStopReason(result.finish_reason, result.stop_sequence);
  out["stop_sequence"] = AnthropicStopSequence(result.stop_sequence);
  out["usage"] = AnthropicUsageJson(result.usage);
  return out;
}

}  // namespace kvmesh::router::gateway
