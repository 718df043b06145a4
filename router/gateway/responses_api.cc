#include "router/gateway/responses_api.h"

#include <limits>
#include <optional>
#include <string_view>

#include "common/grammar/grammar.h"
#include "common/grammar/json_schema.h"
#include "common/log.h"
#include "router/gateway/chat_tools.h"
#include "router/gateway/json_fields.h"
#include "router/gateway/openai_api.h"
#include "router/gateway/openai_logprobs.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr std::string_view kBase64 =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string Base64Encode(std::string_view bytes) {
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t v = static_cast<unsigned char>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) v |= static_cast<unsigned char>(bytes[i + 2]);
    out += kBase64[(v >> 18) & 63];
    out += kBase64[(v >> 12) & 63];
    out += i + 1 < bytes.size() ? kBase64[(v >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? kBase64[v & 63] : '=';
  }
  return out;
}

// What EncodeReasoning puts first, so another server's encrypted content is
// never taken for reasoning text.
constexpr std::string_view kReasoningMarker = "kvmesh-reasoning:";

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    const int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (int k = 1; k < n; ++k) {
      if ((static_cast<unsigned char>(s[i + k]) >> 6) != 2) return false;
    }
    i += n;
  }
  return true;
}

// Empty when `text` is not base64 (another server's encrypted reasoning).
std::optional<std::string> Base64Decode(std::string_view text) {
  std::string out;
  uint32_t v = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=') break;
    const size_t d = kBase64.find(c);
    if (d == std::string_view::npos) return std::nullopt;
    v = (v << 6) | static_cast<uint32_t>(d);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((v >> bits) & 0xff);
    }
  }
  return out;
}

Status Unsupported(std::string what) {
  what += " is not supported by kvmesh";
  return InvalidArgumentError(std::move(what));
}

// Text of a content array: input_text, output_text, text and refusal parts,
// joined with "\n"; other parts (images, files, audio) are a 400.
Status ReadContent(const json& content, const std::string& path, std::string* out) {
  if (content.is_string()) {
    *out = content.get<std::string>();
    return Status::Ok();
  }
  if (!content.is_array()) {
    return InvalidArgumentError("field \"" + path +
                                "\" must be a string or an array of content parts, got " +
                                std::string(JsonTypeName(content)));
  }
  for (size_t i = 0; i < content.size(); ++i) {
    const std::string part_path = IndexedPath(path, i);
    const json& part = content[i];
    if (!part.is_object()) return NotAnObject(part_path, part);
    JsonObjectReader reader(part, part_path);
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    std::string text;
    if (type == "input_text" || type == "output_text" || type == "text") {
      RETURN_IF_ERROR(reader.String("text", &text));
    } else if (type == "refusal") {
      RETURN_IF_ERROR(reader.String("refusal", &text));
    } else {
      return reader.ValueError("type",
                               "must be input_text or output_text (kvmesh serves text only)",
                               part.contains("type") ? part["type"] : json(nullptr));
    }
    if (i > 0) *out += '\n';
    *out += text;
  }
  return Status::Ok();
}

// Builds the conversation from input items; reasoning items attach to the
// assistant turn that follows them, function calls to the assistant turn
// they follow.
class ConversationBuilder {
 public:
  explicit ConversationBuilder(std::vector<v1::ChatMessage>* out) : out_(out) {}

  Status Item(const json& item, const std::string& path) {
    if (!item.is_object()) return NotAnObject(path, item);
    JsonObjectReader reader(item, path);
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    if (type.empty() && item.contains("role")) type = "message";  // the short form
    if (type == "message") return Message(reader, item);
    if (type == "function_call") return FunctionCall(reader);
    if (type == "function_call_output") return FunctionCallOutput(reader);
    if (type == "reasoning") return Reasoning(reader, item);
    if (type == "item_reference") {
      return InvalidArgumentError("field \"" + path +
                                  "\" is an item_reference; kvmesh keeps no items by id (send "
                                  "the item itself, or use previous_response_id)");
    }
    if (type.empty()) return reader.Missing("type");
    return reader.ValueError("type",
                             "must be message, function_call, function_call_output or reasoning");
  }

 private:
  Status Message(const JsonObjectReader& reader, const json& item) {
    std::string role;
    RETURN_IF_ERROR(reader.String("role", &role));
    if (role.empty()) return reader.Missing("role");
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant") {
      return reader.ValueError("role", "must be system, developer, user or assistant");
    }
    v1::ChatMessage message;
    message.set_role(role);
    if (const json* content = reader.Find("content"); content != nullptr) {
      RETURN_IF_ERROR(
          ReadContent(*content, reader.FieldName("content"), message.mutable_content()));
    }
    if (role == "assistant") {
      message.set_reasoning_content(std::move(pending_reasoning_));
      pending_reasoning_.clear();
    }
    out_->push_back(std::move(message));
    return Status::Ok();
  }

  Status FunctionCall(const JsonObjectReader& reader) {
    v1::ToolCall call;
    RETURN_IF_ERROR(reader.String("call_id", call.mutable_id()));
    if (call.id().empty()) return reader.Missing("call_id");
    RETURN_IF_ERROR(reader.String("name", call.mutable_name()));
    if (call.name().empty()) return reader.Missing("name");
    std::string arguments;
    RETURN_IF_ERROR(reader.String("arguments", &arguments));
    if (arguments.empty()) arguments = "{}";
    if (!json::parse(arguments, nullptr, /*allow_exceptions=*/false).is_object()) {
      return reader.ValueError("arguments", "must be a string holding a JSON object",
                               json(arguments));
    }
    call.set_arguments_json(std::move(arguments));
    // Calls made in one turn follow its message (or each other).
    if (out_->empty() || out_->back().role() != "assistant" || !pending_reasoning_.empty()) {
      v1::ChatMessage turn;
      turn.set_role("assistant");
      turn.set_reasoning_content(std::move(pending_reasoning_));
      pending_reasoning_.clear();
      out_->push_back(std::move(turn));
    }
    *out_->back().add_tool_calls() = std::move(call);
    return Status::Ok();
  }

  Status FunctionCallOutput(const JsonObjectReader& reader) {
    v1::ChatMessage message;
    message.set_role("tool");
    RETURN_IF_ERROR(reader.String("call_id", message.mutable_tool_call_id()));
    if (message.tool_call_id().empty()) return reader.Missing("call_id");
    const json* output = reader.Find("output");
    if (output != nullptr) {
      RETURN_IF_ERROR(ReadContent(*output, reader.FieldName("output"), message.mutable_content()));
    }
    out_->push_back(std::move(message));
    return Status::Ok();
  }

  // The text of a reasoning item: its content parts, else its
  // encrypted_content when this server wrote it (base64 of the text).
  Status Reasoning(const JsonObjectReader& reader, const json& item) {
    std::string text;
    if (const json* content = reader.Find("content"); content != nullptr && content->is_array()) {
      for (const json& part : *content) {
        if (part.is_object() && part.contains("text") && part["text"].is_string()) {
          text += part["text"].get<std::string>();
        }
      }
    }
    std::string encrypted;
    RETURN_IF_ERROR(reader.String("encrypted_content", &encrypted));
    if (text.empty() && encrypted.rfind(kReasoningMarker, 0) == 0) {
      std::optional<std::string> decoded =
          Base64Decode(std::string_view(encrypted).substr(kReasoningMarker.size()));
      if (decoded && ValidUtf8(*decoded)) text = std::move(*decoded);
    }
    pending_reasoning_ += text;
    (void)item;
    return Status::Ok();
  }

  std::vector<v1::ChatMessage>* out_;
  std::string pending_reasoning_;
};

// Function tools in the chat templates' format; other tool types are
// listed, not offered.
Status ParseTools(const JsonObjectReader& body, v1::ChatRequest* request) {
  const json* tools = body.Find("tools");
  if (tools != nullptr && !tools->is_array()) return body.TypeError("tools", "an array of tools");
  if (tools != nullptr) RETURN_IF_ERROR(body.AtMost("tools", *tools, kMaxTools));
  ordered_json out = ordered_json::array();
  for (size_t i = 0; tools != nullptr && i < tools->size(); ++i) {
    const json& tool = (*tools)[i];
    const std::string path = IndexedPath("tools", i);
    if (!tool.is_object()) return NotAnObject(path, tool);
    JsonObjectReader reader(tool, path);
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    if (type.empty()) return reader.Missing("type");
    if (type != "function") {
      Log(LogLevel::kDebug, "gateway",
          "responses: tool " + path + " of type " + type + " is not offered to the model");
      continue;
    }
    std::string name, description;
    RETURN_IF_ERROR(reader.String("name", &name));
    if (name.empty()) return reader.Missing("name");
    RETURN_IF_ERROR(reader.String("description", &description));
    ordered_json entry = {{"name", name}};
    if (!description.empty()) entry["description"] = description;
    if (const json* parameters = reader.Find("parameters"); parameters != nullptr) {
      if (!parameters->is_object()) return reader.TypeError("parameters", "an object");
      entry["parameters"] = ordered_json::parse(parameters->dump());
    }
    out.push_back({{"type", "function"}, {"function", std::move(entry)}});
  }
  const json* choice = body.Find("tool_choice");
  std::string mode = "auto";
  if (choice != nullptr && choice->is_string()) {
    mode = choice->get<std::string>();
    if (mode != "none" && mode != "auto" && mode != "required") {
      return body.ValueError("tool_choice", "must be \"none\", \"auto\" or \"required\"", *choice);
    }
  } else if (choice != nullptr && choice->is_object()) {
    JsonObjectReader reader(*choice, "tool_choice");
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    if (type.empty()) return reader.Missing("type");
    if (type == "function") {
      RETURN_IF_ERROR(reader.String("name", &mode));
      if (mode.empty()) return reader.Missing("name");
    } else if (type != "allowed_tools") {
      return reader.ValueError("type", "must be \"function\" (a local model runs no hosted tools)");
    }
  } else if (choice != nullptr) {
    return body.TypeError("tool_choice", "a string or an object");
  }
  if (mode == "none" || out.empty()) {
    if (mode == "required") {
      return InvalidArgumentError("tool_choice \"required\" needs a tool of type function");
    }
    return Status::Ok();
  }
  if (mode != "auto") request->set_tool_choice(mode);
  request->set_tools_json(out.dump());
  return Status::Ok();
}

// text.format: text, json_object or json_schema {schema}.
Status ParseTextFormat(const JsonObjectReader& body, v1::GenerationOptions* options) {
  const json* text = body.Find("text");
  if (text == nullptr) return Status::Ok();
  if (!text->is_object()) return body.TypeError("text", "an object");
  JsonObjectReader text_reader(*text, "text");
  const json* format = text_reader.Find("format");
  if (format == nullptr) return Status::Ok();
  if (!format->is_object()) return text_reader.TypeError("format", "an object");
  return ApplyOutputFormat(*format, "text.format", /*schema_nested=*/false, options);
}

// Fields taken as given and echoed, that change nothing here.
Status CheckAccepted(const JsonObjectReader& body) {
  bool flag = false;
  RETURN_IF_ERROR(body.Bool("background", &flag));
  if (flag) return Unsupported("\"background\": true");
  if (body.Find("conversation") != nullptr) {
    return Unsupported("\"conversation\" (send the input, or use previous_response_id)");
  }
  if (body.Find("prompt") != nullptr) return Unsupported("\"prompt\" (stored prompt templates)");
  RETURN_IF_ERROR(body.Bool("parallel_tool_calls", &flag));
  for (std::string_view key : {"reasoning", "metadata", "client_metadata"}) {
    if (const json* v = body.Find(key); v != nullptr && !v->is_object()) {
      return body.TypeError(key, "an object");
    }
  }
  if (const json* include = body.Find("include"); include != nullptr) {
    if (!include->is_array()) return body.TypeError("include", "an array of strings");
  }
  std::string ignored;
  for (std::string_view key : {"user", "safety_identifier", "service_tier", "truncation"}) {
    RETURN_IF_ERROR(body.String(key, &ignored));
  }
  return Status::Ok();
}

ordered_json Echo(const json& body, std::string_view key, ordered_json fallback) {
  auto it = body.find(std::string(key));
  if (it == body.end() || it->is_null()) return fallback;
  return ordered_json::parse(it->dump());
}

}  // namespace

std::string PreviousResponseId(const json& body) {
  auto it = body.find("previous_response_id");
  return it != body.end() && it->is_string() ? it->get<std::string>() : "";
}

StatusOr<ResponsesRequest> ParseResponsesRequest(const json& body,
                                                 const std::vector<v1::ChatMessage>* previous) {
  JsonObjectReader reader(body, "");
  ResponsesRequest parsed;
  RETURN_IF_ERROR(CheckAccepted(reader));
  v1::ChatRequest& request = parsed.request;
  RETURN_IF_ERROR(reader.String("model", request.mutable_model()));
  RETURN_IF_ERROR(reader.String("previous_response_id", &parsed.previous_response_id));

  std::string instructions;
  RETURN_IF_ERROR(reader.String("instructions", &instructions));
  const json* input = reader.Find("input");
  if (input == nullptr) return reader.Missing("input");
  if (input->is_string()) {
    v1::ChatMessage user;
    user.set_role("user");
    user.set_content(input->get<std::string>());
    parsed.new_messages.push_back(std::move(user));
  } else if (input->is_array()) {
    RETURN_IF_ERROR(reader.AtMost("input", *input, kMaxMessages));
    ConversationBuilder builder(&parsed.new_messages);
    for (size_t i = 0; i < input->size(); ++i) {
      RETURN_IF_ERROR(builder.Item((*input)[i], IndexedPath("input", i)));
    }
  } else {
    return reader.TypeError("input", "a string or an array of input items");
  }
  if (parsed.new_messages.empty() && (previous == nullptr || previous->empty())) {
    return reader.ValueError("input", "must hold at least one message", *input);
  }
  // Instructions apply to this response only (a previous response's are
  // not carried over), first.
  if (!instructions.empty()) {
    v1::ChatMessage* system = request.add_messages();
    system->set_role("system");
    system->set_content(instructions);
  }
  if (previous != nullptr) {
    for (const v1::ChatMessage& m : *previous) *request.add_messages() = m;
  }
  for (const v1::ChatMessage& m : parsed.new_messages) *request.add_messages() = m;
  NameToolResults(&request);

  RETURN_IF_ERROR(ParseTools(reader, &request));
  v1::GenerationOptions* options = request.mutable_options();
  RETURN_IF_ERROR(ParseTextFormat(reader, options));
  std::optional<int64_t> max_tokens;
  RETURN_IF_ERROR(reader.IntegerInRange("max_output_tokens", 1, kMaxInt32, &max_tokens));
  if (max_tokens) options->set_max_tokens(static_cast<int32_t>(*max_tokens));
  std::optional<double> number;
  RETURN_IF_ERROR(reader.NumberInRange("temperature", 0, 2, &number));
  if (number) options->mutable_sampling()->set_temperature(static_cast<float>(*number));
  number.reset();
  RETURN_IF_ERROR(reader.NumberInRange("top_p", 0, 1, &number));
  if (number) options->mutable_sampling()->set_top_p(static_cast<float>(*number));
  std::optional<int64_t> top_logprobs;
  RETURN_IF_ERROR(reader.IntegerInRange("top_logprobs", 0, 20, &top_logprobs));
  if (top_logprobs) {
    options->set_logprobs(true);
    options->set_top_logprobs(static_cast<uint32_t>(*top_logprobs));
  }
  RETURN_IF_ERROR(reader.String("prompt_cache_key", options->mutable_session_id()));
  RETURN_IF_ERROR(reader.Bool("stream", &parsed.stream));
  RETURN_IF_ERROR(reader.Bool("store", &parsed.store));

  ordered_json& echo = parsed.echo;
  echo["instructions"] = instructions.empty() ? ordered_json(nullptr) : ordered_json(instructions);
  echo["max_output_tokens"] = Echo(body, "max_output_tokens", nullptr);
  echo["metadata"] = Echo(body, "metadata", ordered_json::object());
  echo["parallel_tool_calls"] = Echo(body, "parallel_tool_calls", true);
  echo["previous_response_id"] = Echo(body, "previous_response_id", nullptr);
  echo["prompt_cache_key"] = Echo(body, "prompt_cache_key", nullptr);
  echo["reasoning"] = Echo(body, "reasoning", {{"effort", nullptr}, {"summary", nullptr}});
  echo["store"] = parsed.store;
  echo["temperature"] = Echo(body, "temperature", 1.0);
  echo["text"] = Echo(body, "text", {{"format", {{"type", "text"}}}});
  echo["tool_choice"] = Echo(body, "tool_choice", "auto");
  echo["tools"] = Echo(body, "tools", ordered_json::array());
  echo["top_logprobs"] = Echo(body, "top_logprobs", 0);
  echo["top_p"] = Echo(body, "top_p", 1.0);
  echo["truncation"] = Echo(body, "truncation", "disabled");
  echo["user"] = Echo(body, "user", nullptr);
  return parsed;
}

ordered_json ResponsesOutputItems(const std::string& response_id, const ChoiceResult& result) {
  ordered_json items = ordered_json::array();
  auto id = [&](std::string_view prefix) {
    return std::string(prefix) + response_id + "_" + std::to_string(items.size());
  };
  if (!result.reasoning.empty()) {
    ordered_json item;
    item["id"] = id("rs_");
    item["type"] = "reasoning";
    item["summary"] = ordered_json::array();
    item["content"] =
        ordered_json::array({{{"type", "reasoning_text"}, {"text", result.reasoning}}});
    item["encrypted_content"] = EncodeReasoning(result.reasoning);
    items.push_back(std::move(item));
  }
  if (!result.text.empty() || result.tool_calls.empty()) {
    ordered_json part;
    part["type"] = "output_text";
    part["text"] = result.text;
    part["annotations"] = ordered_json::array();
    part["logprobs"] = ChatLogprobEntries(result.logprobs);
    ordered_json item;
    item["id"] = id("msg_");
    item["type"] = "message";
    item["status"] = "completed";
    item["role"] = "assistant";
    item["content"] = ordered_json::array({std::move(part)});
    items.push_back(std::move(item));
  }
  for (const v1::ToolCall& call : result.tool_calls) {
    ordered_json item;
    item["id"] = id("fc_");
    item["type"] = "function_call";
    item["status"] = "completed";
    item["call_id"] = call.id();
    item["name"] = call.name();
    item["arguments"] = call.arguments_json();
    items.push_back(std::move(item));
  }
  return items;
}

ordered_json ResponsesUsageJson(const v1::Usage& usage) {
  ordered_json out;
  out["input_tokens"] = usage.prompt_tokens();
  out["input_tokens_details"] = {{"cached_tokens", usage.cached_tokens()}};
  out["output_tokens"] = usage.completion_tokens();
  out["output_tokens_details"] = {{"reasoning_tokens", 0}};
  out["total_tokens"] = usage.prompt_tokens() + usage.completion_tokens();
  return out;
}

ordered_json ResponseJson(const ResponseMeta& meta, const ResponsesRequest& request,
                          const ordered_json& output, v1::FinishReason finish,
                          const v1::Usage* usage) {
  const bool done = finish != v1::FINISH_REASON_UNSPECIFIED;
  const bool incomplete = finish == v1::FINISH_REASON_LENGTH || finish == v1::FINISH_REASON_CONTEXT;
  ordered_json out;
  out["id"] = meta.id;
  out["object"] = "response";
  out["created_at"] = meta.created;
  out["status"] = !done ? "in_progress" : incomplete ? "incomplete" : "completed";
  out["background"] = false;
  out["error"] = nullptr;
  out["incomplete_details"] =
      incomplete ? ordered_json({{"reason", "max_output_tokens"}}) : ordered_json(nullptr);
  out["model"] = meta.model;
  out["output"] = output;
  for (const auto& [key, value] : request.echo.items()) out[key] = value;
  out["usage"] = usage != nullptr ? ResponsesUsageJson(*usage) : ordered_json(nullptr);
  return out;
}

std::string EncodeReasoning(std::string_view text) {
  return std::string(kReasoningMarker) + Base64Encode(text);
}

v1::ChatMessage AssistantMessage(const ChoiceResult& result) {
  v1::ChatMessage message;
  message.set_role("assistant");
  message.set_content(result.text);
  message.set_reasoning_content(result.reasoning);
  for (const v1::ToolCall& call : result.tool_calls) *message.add_tool_calls() = call;
  return message;
}

}  // namespace kvmesh::router::gateway
