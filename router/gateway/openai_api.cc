#include "router/gateway/openai_api.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "common/grammar/grammar.h"
#include "common/grammar/json_schema.h"
#include "router/gateway/chat_tools.h"
#include "router/gateway/json_fields.h"
#include "router/gateway/openai_logprobs.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr int64_t kMaxInt32 = std::numeric_limits<int32_t>::max();
constexpr double kInfinity = std::numeric_limits<double>::infinity();
constexpr int64_t kMaxChoices = 16;
constexpr int64_t kMaxTopLogprobs = 20;

Status Unsupported(std::string_view what) {
  std::string message(what);
  message += " is not supported by kvmesh";
  return InvalidArgumentError(std::move(message));
}

// Completions: logprobs (an integer, the alternatives per token; null: off),
// echo and best_of.
Status ParseCompletionShape(const JsonObjectReader& body, const v1::GenerateTextRequest& request,
                            const StreamOptions& stream, CompletionShape* shape,
                            v1::GenerationOptions* options) {
  if (const json* logprobs = body.Find("logprobs"); logprobs != nullptr && !logprobs->is_null()) {
    if (logprobs->is_boolean()) {
      return body.TypeError("logprobs",
                            "an integer (the alternatives per token, 0 to 20) on /v1/completions");
    }
    std::optional<int64_t> top;
    RETURN_IF_ERROR(body.IntegerInRange("logprobs", 0, kMaxTopLogprobs, &top));
    shape->logprobs = static_cast<int>(*top);
    options->set_logprobs(true);
    options->set_top_logprobs(static_cast<uint32_t>(*top));
  }
  RETURN_IF_ERROR(body.Bool("echo", &shape->echo));
  shape->n = options->n() > 0 ? static_cast<int>(options->n()) : 1;
  std::optional<int64_t> best_of;
  RETURN_IF_ERROR(body.IntegerInRange("best_of", 1, kMaxChoices, &best_of));
  shape->best_of = best_of.value_or(shape->n);
  if (shape->best_of < shape->n) {
    return body.ValueError("best_of", "must be at least n (" + std::to_string(shape->n) + ")",
                           *body.Find("best_of"));
  }
  if (shape->best_of > shape->n) {
    if (stream.stream) {
      return InvalidArgumentError(
          "best_of above n cannot be streamed (the best are known at the end)");
    }
    options->set_n(static_cast<uint32_t>(shape->best_of));
    options->set_logprobs(true);  // the ranking needs them
  }
  if (shape->echo) {
    // A token prompt's text comes from the scored tokens.
    shape->prompt_text = request.prompt();
    if (shape->logprobs >= 0 || request.prompt_tokens_size() > 0)
      options->set_prompt_logprobs(true);
  }
  return Status::Ok();
}

// Chat features whose omission would change the answer: legacy function
// calling, audio, web search.
Status RejectUnsupportedChatFeatures(const JsonObjectReader& body) {
  if (body.Find("functions") != nullptr || body.Find("function_call") != nullptr) {
    return Unsupported("\"functions\" / \"function_call\" (legacy function calling; use tools)");
  }
  if (body.Find("audio") != nullptr) return Unsupported("\"audio\" (kvmesh serves text only)");
  if (const json* modalities = body.Find("modalities"); modalities != nullptr) {
    if (!modalities->is_array()) return body.TypeError("modalities", "an array of strings");
    for (const json& m : *modalities) {
      if (m != "text") return body.ValueError("modalities", "may only hold \"text\"", *modalities);
    }
  }
  bool echo = false;
  RETURN_IF_ERROR(body.Bool("echo", &echo));
  if (echo) return Unsupported("\"echo\" on /v1/chat/completions (a completions feature)");
  std::optional<int64_t> best_of;
  RETURN_IF_ERROR(body.Integer("best_of", &best_of));
  if (best_of.value_or(1) != 1) {
    return Unsupported("\"best_of\" on /v1/chat/completions (use n)");
  }
  if (body.Find("web_search_options") != nullptr) {
    return Unsupported("\"web_search_options\" (a local model cannot search the web)");
  }
  return Status::Ok();
}

// Chat: logprobs (a boolean) and top_logprobs (0 to 20, with logprobs).
Status ParseChatLogprobs(const JsonObjectReader& body, bool* logprobs,
                         v1::GenerationOptions* options) {
  RETURN_IF_ERROR(body.Bool("logprobs", logprobs));
  std::optional<int64_t> top;
  RETURN_IF_ERROR(body.IntegerInRange("top_logprobs", 0, kMaxTopLogprobs, &top));
  if (top.has_value() && !*logprobs) {
    return InvalidArgumentError("field \"top_logprobs\" needs \"logprobs\": true");
  }
  options->set_logprobs(*logprobs);
  options->set_top_logprobs(static_cast<uint32_t>(top.value_or(0)));
  return Status::Ok();
}

// Rejects request features whose silent omission would change the answer.
Status RejectUnsupportedFeatures(const JsonObjectReader& body) {
  std::string suffix;
  RETURN_IF_ERROR(body.String("suffix", &suffix));
  if (!suffix.empty()) return Unsupported("\"suffix\"");
  return Status::Ok();
}

// response_format: text, json_object (any JSON object) or json_schema
// ({"name", "schema", "strict"}); the latter two constrain the output.
Status ParseResponseFormat(const JsonObjectReader& body, v1::GenerationOptions* options) {
  const json* format = body.Find("response_format");
  if (format == nullptr) return Status::Ok();
  if (!format->is_object()) return body.TypeError("response_format", "an object");
  return ApplyOutputFormat(*format, "response_format", /*schema_nested=*/true, options);
}

// The extensions llama.cpp's server takes: "grammar" (GBNF text) and
// "json_schema" (a schema object).
Status ParseGrammarExtensions(const JsonObjectReader& body, v1::GenerationOptions* options) {
  std::string gbnf;
  RETURN_IF_ERROR(body.String("grammar", &gbnf));
  if (!gbnf.empty()) {
    auto parsed = grammar::Grammar::ParseGbnf(gbnf);
    if (!parsed.ok()) return parsed.status().WithPrefix("field \"grammar\"");
    options->set_grammar(std::move(gbnf));
  }
  if (const json* schema = body.Find("json_schema"); schema != nullptr) {
    auto converted = grammar::JsonSchemaToGbnf(*schema);
    if (!converted.ok()) return converted.status().WithPrefix("field \"json_schema\"");
    options->set_json_schema(schema->dump());
  }
  if (!options->grammar().empty() && !options->json_schema().empty()) {
    return InvalidArgumentError("give one of grammar, json_schema and response_format");
  }
  return Status::Ok();
}

Status ParseStop(const JsonObjectReader& body, v1::GenerationOptions* options) {
  const json* stop = body.Find("stop");
  if (stop == nullptr) return Status::Ok();
  std::vector<std::string> stops;
  if (stop->is_string()) {
    stops.push_back(stop->get<std::string>());
  } else if (stop->is_array()) {
    for (const json& item : *stop) {
      if (!item.is_string()) return body.TypeError("stop", "a string or an array of strings");
      stops.push_back(item.get<std::string>());
    }
  } else {
    return body.TypeError("stop", "a string or an array of strings");
  }
  for (std::string& text : stops) {
    if (text.empty()) return body.ValueError("stop", "must not contain empty strings", *stop);
    options->add_stop(std::move(text));
  }
  return Status::Ok();
}

// logit_bias: {"token id": bias}, bias in [-100, 100] (the worker checks the
// ids against the vocabulary).
Status ParseLogitBias(const JsonObjectReader& body, v1::SamplingParams* sampling) {
  const json* bias = body.Find("logit_bias");
  if (bias == nullptr) return Status::Ok();
  if (!bias->is_object()) return body.TypeError("logit_bias", "an object of token id → bias");
  if (bias->size() > 1024) {
    return body.ValueError("logit_bias", "allows at most 1024 tokens", json(bias->size()));
  }
  for (const auto& [key, value] : bias->items()) {
    const std::string path = "logit_bias." + key;
    char* end = nullptr;
    const long long id = std::strtoll(key.c_str(), &end, 10);
    if (key.empty() || *end != '\0' || id < 0 || id > kMaxInt32) {
      return InvalidArgumentError("field \"logit_bias\" has key \"" + key +
                                  "\", which is not a token id (a non-negative integer)");
    }
    if (!value.is_number() || !std::isfinite(value.get<double>()) ||
        std::fabs(value.get<double>()) > 100.0) {
      return InvalidArgumentError("field \"" + path + "\" must be a number in [-100, 100], got " +
                                  value.dump());
    }
    (*sampling->mutable_logit_bias())[static_cast<int32_t>(id)] = value.get<float>();
  }
  return Status::Ok();
}

// Everything both endpoints share: sampling, limits, stop strings, streaming.
Status ParseCommonFields(const JsonObjectReader& body, bool chat, v1::GenerationOptions* options,
                         StreamOptions* stream) {
  RETURN_IF_ERROR(RejectUnsupportedFeatures(body));

  std::optional<int64_t> max_tokens;
  // Completions: 0 computes (and with echo and logprobs scores) the prompt only.
  RETURN_IF_ERROR(body.IntegerInRange("max_tokens", chat ? 1 : 0, kMaxInt32, &max_tokens));
  if (chat) {
    RETURN_IF_ERROR(body.IntegerInRange("max_completion_tokens", 1, kMaxInt32, &max_tokens));
  }
  if (max_tokens.has_value()) options->set_max_tokens(static_cast<int32_t>(*max_tokens));

  v1::SamplingParams* sampling = options->mutable_sampling();
  std::optional<double> number;
  RETURN_IF_ERROR(body.NumberInRange("temperature", 0, 2, &number));
  if (number.has_value()) sampling->set_temperature(static_cast<float>(*number));
  number.reset();
  RETURN_IF_ERROR(body.NumberInRange("top_p", 0, 1, &number));
  if (number.has_value()) sampling->set_top_p(static_cast<float>(*number));
  number.reset();
  RETURN_IF_ERROR(body.NumberInRange("min_p", 0, 1, &number));
  if (number.has_value()) sampling->set_min_p(static_cast<float>(*number));
  number.reset();
  RETURN_IF_ERROR(body.NumberInRange("presence_penalty", -2, 2, &number));
  if (number.has_value()) sampling->set_presence_penalty(static_cast<float>(*number));
  number.reset();
  RETURN_IF_ERROR(body.NumberInRange("frequency_penalty", -2, 2, &number));
  if (number.has_value()) sampling->set_frequency_penalty(static_cast<float>(*number));
  number.reset();
  RETURN_IF_ERROR(body.NumberInRange("repetition_penalty", 0, kInfinity, &number));
  if (number.has_value()) {
    if (*number == 0) {
      return body.ValueError("repetition_penalty", "must be above 0",
                             *body.Find("repetition_penalty"));
    }
    sampling->set_repetition_penalty(static_cast<float>(*number));
  }

  std::optional<int64_t> integer;
  // -1 is vLLM's spelling of "off"; kvmesh's is 0.
  RETURN_IF_ERROR(body.IntegerInRange("top_k", -1, kMaxInt32, &integer));
  if (integer.has_value()) sampling->set_top_k(static_cast<int32_t>(*integer < 0 ? 0 : *integer));
  integer.reset();
  RETURN_IF_ERROR(body.Integer("seed", &integer));
  if (integer.has_value()) sampling->set_seed(static_cast<uint64_t>(*integer));

  std::optional<int64_t> n;
  RETURN_IF_ERROR(body.IntegerInRange("n", 1, kMaxChoices, &n));
  if (n.has_value()) options->set_n(static_cast<uint32_t>(*n));
  RETURN_IF_ERROR(ParseStop(body, options));
  RETURN_IF_ERROR(ParseLogitBias(body, sampling));

  std::string ignored_user;
  RETURN_IF_ERROR(body.String("user", &ignored_user));
  // A session's routing hint (session affinity).
  RETURN_IF_ERROR(body.String("prompt_cache_key", options->mutable_session_id()));
  std::string cache_salt;
  RETURN_IF_ERROR(body.String("cache_salt", &cache_salt));
  options->set_cache_salt(std::move(cache_salt));
  bool ignore_eos = false;
  RETURN_IF_ERROR(body.Bool("ignore_eos", &ignore_eos));
  options->set_ignore_eos(ignore_eos);

  RETURN_IF_ERROR(body.Bool("stream", &stream->stream));
  if (const json* stream_options = body.Find("stream_options"); stream_options != nullptr) {
    if (!stream_options->is_object()) return body.TypeError("stream_options", "an object");
    JsonObjectReader reader(*stream_options, "stream_options");
    RETURN_IF_ERROR(reader.Bool("include_usage", &stream->include_usage));
  }
  return Status::Ok();
}

// A prompt given as token ids; false when `value` is not an array of integers.
bool IsTokenIdArray(const json& value) {
  if (!value.is_array()) return false;
  for (const json& id : value) {
    if (!id.is_number_integer()) return false;
  }
  return true;
}

Status ReadTokenIds(const JsonObjectReader& body, const json& ids,
                    v1::GenerateTextRequest* request) {
  for (const json& id : ids) {
    // Unsigned values above INT64_MAX fail the range check too: get<int64_t>
    // wraps them negative.
    int64_t value = id.get<int64_t>();
    if (value < 0 || value > kMaxInt32) {
      return body.ValueError("prompt", "must hold token ids between 0 and 2147483647", id);
    }
    request->add_prompt_tokens(static_cast<int32_t>(value));
  }
  return Status::Ok();
}

Status ParsePrompt(const JsonObjectReader& body, v1::GenerateTextRequest* request) {
  const json* prompt = body.Find("prompt");
  if (prompt == nullptr) return body.Missing("prompt");
  if (prompt->is_string()) {
    request->set_prompt(prompt->get<std::string>());
    return Status::Ok();
  }
  constexpr std::string_view kExpected =
      "a string, an array of token ids, or an array holding one of those";
  if (!prompt->is_array()) return body.TypeError("prompt", kExpected);
  if (prompt->empty()) return body.ValueError("prompt", "must not be empty", *prompt);
  const json& first = prompt->front();
  if (first.is_number_integer()) {
    if (!IsTokenIdArray(*prompt)) return body.TypeError("prompt", kExpected);
    return ReadTokenIds(body, *prompt, request);
  }
  if (prompt->size() > 1) {
    return InvalidArgumentError(
        "field \"prompt\" holds several prompts; kvmesh takes one prompt per request");
  }
  if (first.is_string()) {
    request->set_prompt(first.get<std::string>());
    return Status::Ok();
  }
  if (!IsTokenIdArray(first) || first.empty()) return body.TypeError("prompt", kExpected);
  return ReadTokenIds(body, first, request);
}

// A message's content: a string, or text parts joined with "\n".
Status ParseContent(const JsonObjectReader& message, std::string* content) {
  const json* value = message.Find("content");
  if (value == nullptr) return Status::Ok();  // assistant turns may carry none
  if (value->is_string()) {
    *content = value->get<std::string>();
    return Status::Ok();
  }
  if (!value->is_array()) {
    return message.TypeError("content", "a string or an array of content parts");
  }
  for (size_t i = 0; i < value->size(); ++i) {
    const json& part = (*value)[i];
    std::string part_path = message.FieldName("content");
    part_path += '[';
    part_path += std::to_string(i);
    part_path += ']';
    if (!part.is_object()) {
      std::string text = "field \"";
      text += part_path;
      text += "\" must be an object, got ";
      text += JsonTypeName(part);
      return InvalidArgumentError(std::move(text));
    }
    JsonObjectReader part_reader(part, part_path);
    std::string type;
    RETURN_IF_ERROR(part_reader.String("type", &type));
    if (type != "text") {
      return part_reader.ValueError("type", "must be \"text\" (kvmesh serves text only)",
                                    part.contains("type") ? part["type"] : json(nullptr));
    }
    std::string text;
    RETURN_IF_ERROR(part_reader.String("text", &text));
    if (i > 0) *content += '\n';
    *content += text;
  }
  return Status::Ok();
}

// An assistant message's tool_calls: [{id, type: "function", function:
// {name, arguments}}], the arguments a string holding a JSON object.
Status ParseAssistantToolCalls(const JsonObjectReader& message, v1::ChatMessage* out) {
  const json* calls = message.Find("tool_calls");
  if (calls == nullptr) return Status::Ok();
  if (!calls->is_array()) return message.TypeError("tool_calls", "an array of tool calls");
  for (size_t i = 0; i < calls->size(); ++i) {
    const json& item = (*calls)[i];
    const std::string path = IndexedPath(message.FieldName("tool_calls"), i);
    if (!item.is_object()) return NotAnObject(path, item);
    JsonObjectReader call(item, path);
    v1::ToolCall* tool_call = out->add_tool_calls();
    RETURN_IF_ERROR(call.String("id", tool_call->mutable_id()));
    if (tool_call->id().empty()) return call.Missing("id");
    std::string type = "function";
    RETURN_IF_ERROR(call.String("type", &type));
    if (type != "function") return call.ValueError("type", "must be \"function\"");
    const json* function = call.Find("function");
    if (function == nullptr) return call.Missing("function");
    if (!function->is_object()) return NotAnObject(call.FieldName("function"), *function);
    JsonObjectReader fn(*function, call.FieldName("function"));
    RETURN_IF_ERROR(fn.String("name", tool_call->mutable_name()));
    if (tool_call->name().empty()) return fn.Missing("name");
    std::string arguments;
    RETURN_IF_ERROR(fn.String("arguments", &arguments));
    if (arguments.empty()) arguments = "{}";
    json parsed = json::parse(arguments, nullptr, /*allow_exceptions=*/false);
    if (!parsed.is_object()) {
      return fn.ValueError("arguments", "must be a string holding a JSON object");
    }
    tool_call->set_arguments_json(std::move(arguments));
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
    const std::string path = IndexedPath("messages", i);
    if (!item.is_object()) return NotAnObject(path, item);
    JsonObjectReader message(item, path);
    std::string role;
    RETURN_IF_ERROR(message.String("role", &role));
    if (role.empty()) return message.Missing("role");
    // "developer" is OpenAI's newer name for the system role.
    if (role == "developer") role = "system";
    if (role != "system" && role != "user" && role != "assistant" && role != "tool") {
      return message.ValueError("role", "must be system, developer, user, assistant or tool");
    }
    v1::ChatMessage* out = request->add_messages();
    RETURN_IF_ERROR(ParseContent(message, out->mutable_content()));
    if (role == "assistant") {
      RETURN_IF_ERROR(ParseAssistantToolCalls(message, out));
      // Reasoning sent back by clients that keep it (vLLM's and DeepSeek's
      // field name).
      RETURN_IF_ERROR(message.String("reasoning_content", out->mutable_reasoning_content()));
    } else if (role == "tool") {
      RETURN_IF_ERROR(message.String("tool_call_id", out->mutable_tool_call_id()));
      if (out->tool_call_id().empty()) return message.Missing("tool_call_id");
      RETURN_IF_ERROR(message.String("name", out->mutable_name()));
    }
    out->set_role(std::move(role));
  }
  NameToolResults(request);
  return Status::Ok();
}

// tools ([{type: "function", function: {name, description, parameters}}],
// the templates' own format) and tool_choice.
Status ParseTools(const JsonObjectReader& body, v1::ChatRequest* request) {
  const json* tools = body.Find("tools");
  if (tools == nullptr) return Status::Ok();
  if (!tools->is_array()) return body.TypeError("tools", "an array of tools");
  RETURN_IF_ERROR(body.AtMost("tools", *tools, kMaxTools));
  if (const json* choice = body.Find("tool_choice"); choice != nullptr) {
    if (choice->is_string()) {
      const std::string& mode = choice->get_ref<const std::string&>();
      if (mode == "none") return Status::Ok();  // offered to no one: not rendered
      if (mode != "auto" && mode != "required") {
        return body.ValueError("tool_choice", "must be \"none\", \"auto\" or \"required\"",
                               *choice);
      }
      request->set_tool_choice(mode);
    } else if (choice->is_object()) {
      // {"type": "function", "function": {"name": …}}: that call is forced.
      JsonObjectReader reader(*choice, "tool_choice");
      const json* function = reader.Find("function");
      if (function == nullptr) return reader.Missing("function");
      if (!function->is_object()) return NotAnObject("tool_choice.function", *function);
      JsonObjectReader fn(*function, "tool_choice.function");
      std::string name;
      RETURN_IF_ERROR(fn.String("name", &name));
      if (name.empty()) return fn.Missing("name");
      request->set_tool_choice(name);
    } else {
      return body.TypeError("tool_choice", "a string or an object");
    }
  }
  ordered_json out = ordered_json::array();
  for (size_t i = 0; i < tools->size(); ++i) {
    const json& tool = (*tools)[i];
    const std::string path = IndexedPath("tools", i);
    if (!tool.is_object()) return NotAnObject(path, tool);
    JsonObjectReader reader(tool, path);
    std::string type;
    RETURN_IF_ERROR(reader.String("type", &type));
    if (type != "function") {
      return reader.ValueError("type", "must be \"function\"",
                               tool.contains("type") ? tool["type"] : json(nullptr));
    }
    const json* function = reader.Find("function");
    if (function == nullptr) return reader.Missing("function");
    if (!function->is_object()) return NotAnObject(reader.FieldName("function"), *function);
    JsonObjectReader fn(*function, reader.FieldName("function"));
    std::string name, description;
    RETURN_IF_ERROR(fn.String("name", &name));
    if (name.empty()) return fn.Missing("name");
    RETURN_IF_ERROR(fn.String("description", &description));
    ordered_json entry = {{"name", name}};
    if (!description.empty()) entry["description"] = description;
    if (const json* parameters = fn.Find("parameters"); parameters != nullptr) {
      if (!parameters->is_object()) return fn.TypeError("parameters", "an object");
      entry["parameters"] = ordered_json::parse(parameters->dump());
    }
    out.push_back({{"type", "function"}, {"function", std::move(entry)}});
  }
  if (!out.empty()) request->set_tools_json(out.dump());
  return Status::Ok();
}

}  // namespace

Status ApplyOutputFormat(const json& format, const std::string& path, bool schema_nested,
                         v1::GenerationOptions* options) {
  JsonObjectReader reader(format, path);
  std::string type = "text";
  RETURN_IF_ERROR(reader.String("type", &type));
  if (type == "text") return Status::Ok();
  if (type == "json_object") {
    options->set_grammar(grammar::JsonObjectGbnf());
    return Status::Ok();
  }
  if (type != "json_schema") {
    return reader.ValueError("type", "must be text, json_object or json_schema");
  }
  const json* holder = &format;
  std::string holder_path = path;
  if (schema_nested) {
    holder = reader.Find("json_schema");
    if (holder == nullptr) return reader.Missing("json_schema");
    holder_path += ".json_schema";
    if (!holder->is_object()) return NotAnObject(holder_path, *holder);
  }
  JsonObjectReader holder_reader(*holder, holder_path);
  bool ignored_strict = false;  // the output always follows the schema
  RETURN_IF_ERROR(holder_reader.Bool("strict", &ignored_strict));
  const json* schema = holder_reader.Find("schema");
  if (schema == nullptr) return holder_reader.Missing("schema");
  // Converted here too, so an unsupported schema is a 400 naming it.
  auto gbnf = grammar::JsonSchemaToGbnf(*schema);
  if (!gbnf.ok()) return gbnf.status().WithPrefix(holder_path + ".schema");
  options->set_json_schema(schema->dump());
  return Status::Ok();
}

StatusOr<OpenAiCompletionRequest> ParseOpenAiCompletionRequest(const json& body) {
  JsonObjectReader reader(body, "");
  OpenAiCompletionRequest parsed;
  RETURN_IF_ERROR(reader.String("model", parsed.request.mutable_model()));
  RETURN_IF_ERROR(ParsePrompt(reader, &parsed.request));
  if (const json* tools = reader.Find("tools"); tools != nullptr && !tools->empty()) {
    return Unsupported("\"tools\" on /v1/completions (use /v1/chat/completions)");
  }
  RETURN_IF_ERROR(
      ParseCommonFields(reader, /*chat=*/false, parsed.request.mutable_options(), &parsed.stream));
  RETURN_IF_ERROR(ParseResponseFormat(reader, parsed.request.mutable_options()));
  RETURN_IF_ERROR(ParseGrammarExtensions(reader, parsed.request.mutable_options()));
  RETURN_IF_ERROR(ParseCompletionShape(reader, parsed.request, parsed.stream, &parsed.shape,
                                       parsed.request.mutable_options()));
  return parsed;
}

StatusOr<OpenAiChatRequest> ParseOpenAiChatRequest(const json& body) {
  JsonObjectReader reader(body, "");
  OpenAiChatRequest parsed;
  RETURN_IF_ERROR(reader.String("model", parsed.request.mutable_model()));
  RETURN_IF_ERROR(RejectUnsupportedChatFeatures(reader));
  RETURN_IF_ERROR(ParseMessages(reader, &parsed.request));
  RETURN_IF_ERROR(ParseTools(reader, &parsed.request));
  RETURN_IF_ERROR(ParseResponseFormat(reader, parsed.request.mutable_options()));
  RETURN_IF_ERROR(ParseGrammarExtensions(reader, parsed.request.mutable_options()));
  bool ignored_parallel_tool_calls = true;
  RETURN_IF_ERROR(reader.Bool("parallel_tool_calls", &ignored_parallel_tool_calls));
  RETURN_IF_ERROR(
      ParseCommonFields(reader, /*chat=*/true, parsed.request.mutable_options(), &parsed.stream));
  RETURN_IF_ERROR(ParseChatLogprobs(reader, &parsed.logprobs, parsed.request.mutable_options()));
  return parsed;
}

}  // namespace kvmesh::router::gateway
