#include "router/chat/chat_template.h"

#include <array>
#include <optional>
#include <utility>

namespace kvmesh::router {
namespace {

using Family = ChatTemplate::Family;

struct NamedFamily {
  std::string_view name;
  Family family;
};

// Canonical names first (name() returns the first entry of a family), then
// aliases.
constexpr std::array<NamedFamily, 13> kNamedFamilies = {{
    {"chatml", Family::kChatml},
    {"llama2", Family::kLlama2},
    {"llama3", Family::kLlama3},
    {"llama3.1", Family::kLlama31},
    {"mistral-v1", Family::kMistralV1},
    {"mistral-v3", Family::kMistralV3},
    {"mistral-v3-tekken", Family::kMistralV3Tekken},
    {"mistral-v7", Family::kMistralV7},
    {"mistral-v7-tekken", Family::kMistralV7Tekken},
    {"zephyr", Family::kZephyr},
    {"phi3", Family::kPhi3},
    {"qwen", Family::kChatml},
    {"mistral", Family::kMistralV3},
}};

constexpr std::array<std::string_view, kNamedFamilies.size()> kSupportedNames = [] {
  std::array<std::string_view, kNamedFamilies.size()> names{};
  for (size_t i = 0; i < kNamedFamilies.size(); ++i) names[i] = kNamedFamilies[i].name;
  return names;
}();

std::string SupportedNamesList() {
  std::string list;
  for (std::string_view name : kSupportedNames) {
    if (!list.empty()) list += ", ";
    list += name;
  }
  return list;
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

bool IsAsciiSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

// Jinja's `trim` and Python's str.strip(), for ASCII whitespace.
std::string_view Strip(std::string_view text) {
  while (!text.empty() && IsAsciiSpace(text.front())) text.remove_prefix(1);
  while (!text.empty() && IsAsciiSpace(text.back())) text.remove_suffix(1);
  return text;
}

// The start of `text` for an error message: at most ~60 bytes, cut on a UTF-8
// boundary, control characters escaped so the message stays on one line.
std::string Excerpt(std::string_view text) {
  constexpr size_t kMaxBytes = 60;
  size_t end = text.size();
  if (end > kMaxBytes) {
    end = kMaxBytes;
    while (end > 0 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
  }
  std::string out;
  for (char c : text.substr(0, end)) {
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  if (end < text.size()) out += "...";
  return out;
}

// Zephyr-style templates end every user turn with the end-of-sequence token;
// Falcon 3 and GLM-Edge use the same <|user|>/<|assistant|> markers without
// it, so the end of the user turn is what tells them apart. Returns the
// literal end text the template writes ("" when it writes `eos_token`), or
// nullopt when no user turn ends with one.
std::optional<std::string_view> ZephyrUserTurnEnd(std::string_view tmpl) {
  constexpr std::string_view kUser = "<|user|>";
  constexpr size_t kMaxTurnSource = 200;
  for (size_t pos = tmpl.find(kUser); pos != std::string_view::npos;
       pos = tmpl.find(kUser, pos + kUser.size())) {
    std::string_view turn = tmpl.substr(pos + kUser.size(), kMaxTurnSource);
    turn = turn.substr(0, turn.find("<|"));  // up to the next marker
    if (Contains(turn, "<|endoftext|>")) return "<|endoftext|>";
    if (Contains(turn, "</s>")) return "</s>";
    if (Contains(turn, "eos_token")) return "";
  }
  return std::nullopt;
}

// A Mistral template whose [INST] is closed by a quote right away (no space
// after it) is a tekken variant.
bool IsTekken(std::string_view tmpl) {
  return Contains(tmpl, "[INST]'") || Contains(tmpl, "[INST]\"");
}

Status Unrecognised(std::string_view tmpl, std::string_view hint) {
  std::string message = "unrecognised chat template \"";
  message += Excerpt(tmpl);
  message += "\" (tokenizer.chat_template)";
  if (!hint.empty()) {
    message += ": ";
    message += hint;
  }
  message += "; kvmesh renders these families: ";
  message += SupportedNamesList();
  message += "; choose one with --chat-template NAME";
  return InvalidArgumentError(std::move(message));
}

// Checks the order llama2 and mistral-v1/v3 templates enforce (they raise an
// exception otherwise): an optional leading system message, then user and
// assistant alternating, starting with user.
Status CheckAlternating(std::span<const ChatMessage> messages, std::string_view family) {
  size_t first = (!messages.empty() && messages[0].role == "system") ? 1 : 0;
  for (size_t i = first; i < messages.size(); ++i) {
    std::string_view expected = (i - first) % 2 == 0 ? "user" : "assistant";
    if (messages[i].role != expected) {
      std::string message = "the ";
      message += family;
      message += " chat template needs one optional system message first, then user and ";
      message += "assistant messages alternating from user; message ";
      message += std::to_string(i);
      message += " is \"";
      message += messages[i].role;
      message += "\" where \"";
      message += expected;
      message += "\" belongs";
      return InvalidArgumentError(std::move(message));
    }
  }
  return Status::Ok();
}

void AppendChatml(std::span<const ChatMessage> messages, bool add_generation_prompt,
                  std::string& out) {
  for (const ChatMessage& m : messages) {
    out += "<|im_start|>";
    out += m.role;
    out += '\n';
    out += m.content;
    out += "<|im_end|>\n";
  }
  if (add_generation_prompt) out += "<|im_start|>assistant\n";
}

void AppendLlama3Turn(std::string_view role, std::string_view content, std::string& out) {
  out += "<|start_header_id|>";
  out += role;
  out += "<|end_header_id|>\n\n";
  out += content;
  out += "<|eot_id|>";
}

void AppendLlama3(std::span<const ChatMessage> messages, bool add_generation_prompt,
                  bool knowledge_header, std::string& out) {
  out += "<|begin_of_text|>";
  if (knowledge_header) {
    // Llama 3.1+ always open with a system turn carrying these lines.
    std::string_view system;
    if (messages[0].role == "system") {
      system = Strip(messages[0].content);
      messages = messages.subspan(1);
    }
    std::string header = "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n";
    header += system;
    AppendLlama3Turn("system", header, out);
  }
  for (const ChatMessage& m : messages) AppendLlama3Turn(m.role, Strip(m.content), out);
  if (add_generation_prompt) out += "<|start_header_id|>assistant<|end_header_id|>\n\n";
}

void AppendLlama2(std::span<const ChatMessage> messages, std::string_view eos, std::string& out) {
  std::string_view system;
  bool has_system = messages[0].role == "system";
  if (has_system) {
    system = messages[0].content;
    messages = messages.subspan(1);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    std::string content;
    if (i == 0 && has_system) {
      content = "<<SYS>>\n";
      content += system;
      content += "\n<</SYS>>\n\n";
    }
    content += messages[i].content;
    if (messages[i].role == "user") {
      // The template writes bos_token before every [INST]; the first one is
      // the prompt's leading BOS, which the tokenizer adds.
      if (i > 0) out += "<s>";
      out += "[INST] ";
      out += Strip(content);
      out += " [/INST]";
    } else {
      out += ' ';
      out += Strip(content);
      out += ' ';
      out += eos;
    }
  }
}

void AppendMistralV1(std::span<const ChatMessage> messages, std::string_view eos,
                     std::string& out) {
  std::string_view system;
  bool has_system = messages[0].role == "system";
  if (has_system) {
    system = messages[0].content;
    messages = messages.subspan(1);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out += " [INST] ";
      if (i == 0 && has_system) {
        out += system;
        out += "\n\n";
      }
      out += m.content;
      out += " [/INST]";
    } else {
      out += ' ';
      out += m.content;
      out += eos;
    }
  }
}

void AppendMistralV3(std::span<const ChatMessage> messages, bool tekken, std::string_view eos,
                     std::string& out) {
  std::string_view system;
  bool has_system = messages[0].role == "system";
  if (has_system) {
    system = messages[0].content;
    messages = messages.subspan(1);
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const ChatMessage& m = messages[i];
    if (m.role == "user") {
      out += tekken ? "[INST]" : "[INST] ";
      // Mistral's v3 templates attach the system text to the last message,
      // and only when that message is the user's.
      if (i + 1 == messages.size() && has_system) {
        out += system;
        out += "\n\n";
      }
      out += m.content;
      out += "[/INST]";
    } else if (tekken) {
      out += m.content;
      out += eos;
    } else {
      out += ' ';
      out += Strip(m.content);
      out += eos;
    }
  }
}

void AppendMistralV7(std::span<const ChatMessage> messages, bool tekken, std::string_view eos,
                     std::string& out) {
  std::string_view space = tekken ? "" : " ";
  for (const ChatMessage& m : messages) {
    if (m.role == "system") {
      out += "[SYSTEM_PROMPT]";
      out += space;
      out += m.content;
      out += "[/SYSTEM_PROMPT]";
    } else if (m.role == "user") {
      out += "[INST]";
      out += space;
      out += m.content;
      out += "[/INST]";
    } else {
      out += space;
      out += m.content;
      out += eos;
    }
  }
}

// zephyr and phi3: "<|role|>\ncontent" + end of turn + "\n".
void AppendRoleMarkerTurns(std::span<const ChatMessage> messages, bool add_generation_prompt,
                           bool skip_empty_system, std::string_view end_of_turn, std::string& out) {
  for (const ChatMessage& m : messages) {
    if (skip_empty_system && m.role == "system" && m.content.empty()) continue;
    out += "<|";
    out += m.role;
    out += "|>\n";
    out += m.content;
    out += end_of_turn;
    out += '\n';
  }
  if (add_generation_prompt) out += "<|assistant|>\n";
}

// A message as templates read it (Hugging Face's shape): tool calls as
// {id, type: "function", function: {name, arguments}} with the arguments an
// object, reasoning_content, tool_call_id and name only where set.
StatusOr<nlohmann::ordered_json> JinjaMessage(const ChatMessage& m) {
  nlohmann::ordered_json out = {{"role", m.role}, {"content", m.content}};
  if (!m.reasoning_content.empty()) out["reasoning_content"] = m.reasoning_content;
  if (!m.tool_calls.empty()) {
    nlohmann::ordered_json calls = nlohmann::ordered_json::array();
    for (const ChatToolCall& call : m.tool_calls) {
      auto arguments = nlohmann::ordered_json::parse(call.arguments_json, nullptr,
                                                     /*allow_exceptions=*/false);
      if (call.arguments_json.empty()) arguments = nlohmann::ordered_json::object();
      if (!arguments.is_object()) {
        return InvalidArgumentError("tool call " + call.id + " (" + call.name +
                                    "): arguments must be a JSON object");
      }
      calls.push_back({{"id", call.id},
                       {"type", "function"},
                       {"function", {{"name", call.name}, {"arguments", std::move(arguments)}}}});
    }
    out["tool_calls"] = std::move(calls);
  }
  if (!m.tool_call_id.empty()) out["tool_call_id"] = m.tool_call_id;
  if (!m.name.empty()) out["name"] = m.name;
  return out;
}

}  // namespace

StatusOr<ChatTemplate> ChatTemplate::FromName(std::string_view name, std::string_view eos_text) {
  for (const NamedFamily& entry : kNamedFamilies) {
    if (entry.name == name) return ChatTemplate(entry.family, std::string(eos_text));
  }
  std::string message = "unknown chat template name \"";
  message += name;
  message += "\"; choose one of: ";
  message += SupportedNamesList();
  return InvalidArgumentError(std::move(message));
}

StatusOr<ChatTemplate> ChatTemplate::Detect(std::string_view tmpl, std::string_view eos_text) {
  auto make = [&](Family family) { return ChatTemplate(family, std::string(eos_text)); };
  if (Strip(tmpl).empty()) return make(Family::kChatml);
  for (const NamedFamily& entry : kNamedFamilies) {
    if (entry.name == tmpl) return make(entry.family);
  }
  auto has = [tmpl](std::string_view marker) { return Contains(tmpl, marker); };

  if (has("<|im_start|>")) {
    // Phi-4 and SmolVLM reuse <|im_start|> in formats that are not chatml.
    if (has("<|im_sep|>")) return Unrecognised(tmpl, "Phi-4's <|im_sep|> format is not chatml");
    if (has("<end_of_utterance>")) {
      return Unrecognised(tmpl, "SmolVLM's <end_of_utterance> format is not chatml");
    }
    if (has("<|im_end|>")) return make(Family::kChatml);
  }
  if (has("<|start_header_id|>") && has("<|end_header_id|>") && has("<|eot_id|>")) {
    return make(has("Cutting Knowledge Date") ? Family::kLlama31 : Family::kLlama3);
  }
  if (has("[INST]")) {
    if (has("[SYSTEM_PROMPT]")) {
      return make(IsTekken(tmpl) ? Family::kMistralV7Tekken : Family::kMistralV7);
    }
    if (has("' [INST]") || has("\" [INST]")) return make(Family::kMistralV1);
    if (has("<<SYS>>")) return make(Family::kLlama2);
    if (has("[AVAILABLE_TOOLS]") || has("[TOOL_CALLS]")) {
      return make(IsTekken(tmpl) ? Family::kMistralV3Tekken : Family::kMistralV3);
    }
    return Unrecognised(tmpl,
                        "an [INST] template without <<SYS>>, [SYSTEM_PROMPT] or Mistral's tool "
                        "markers fits several formats (older Mistral 7B templates want "
                        "mistral-v1)");
  }
  if (has("<|end|>") && (has("<|user|>") || has("<|assistant|>"))) {
    if (has("<|tool|>")) return Unrecognised(tmpl, "Phi-4-mini's format is not phi3");
    return make(Family::kPhi3);
  }
  if (has("<|user|>") && has("<|assistant|>")) {
    std::optional<std::string_view> end = ZephyrUserTurnEnd(tmpl);
    if (end.has_value()) {
      return ChatTemplate(Family::kZephyr, std::string(end->empty() ? eos_text : *end));
    }
  }
  return Unrecognised(tmpl, "");
}

std::span<const std::string_view> ChatTemplate::SupportedNames() { return kSupportedNames; }

StatusOr<ChatTemplate> ChatTemplate::FromGguf(std::string_view tmpl, std::string_view bos_text,
                                              std::string_view eos_text) {
  if (Strip(tmpl).empty()) return Detect(tmpl, eos_text);
  for (const NamedFamily& entry : kNamedFamilies) {
    if (entry.name == tmpl) return Detect(tmpl, eos_text);
  }
  auto parsed = jinja::Template::Parse(tmpl);
  if (!parsed.ok()) {
    auto family = Detect(tmpl, eos_text);
    if (family.ok()) return family;
    return InvalidArgumentError("the model's chat template does not parse (" +
                                parsed.status().message() + ") and " + family.status().message());
  }
  ChatTemplate t(Family::kJinja, std::string(eos_text));
  t.jinja_ = std::make_shared<const jinja::Template>(std::move(parsed).value());
  t.bos_text_ = std::string(bos_text);
  t.jinja_writes_bos_ = Contains(tmpl, "bos_token");
  t.output_syntax_ = DetectOutputSyntax(tmpl);
  return t;
}

std::string_view ChatTemplate::name() const {
  if (family_ == Family::kJinja) return "jinja";
  for (const NamedFamily& entry : kNamedFamilies) {
    if (entry.family == family_) return entry.name;
  }
  return "unknown";  // unreachable: every family has a name
}

bool ChatTemplate::bos_in_text() const {
  if (family_ == Family::kJinja) return jinja_writes_bos_;
  return family_ == Family::kLlama3 || family_ == Family::kLlama31;
}

StatusOr<std::string> ChatTemplate::Render(std::span<const ChatMessage> messages,
                                           bool add_generation_prompt,
                                           std::string_view tools_json) const {
  if (messages.empty()) return InvalidArgumentError("the conversation has no messages");
  if (family_ == Family::kJinja) {
    nlohmann::ordered_json vars = {{"bos_token", bos_text_},
                                   {"eos_token", eos_text_},
                                   {"add_generation_prompt", add_generation_prompt},
                                   {"messages", nlohmann::ordered_json::array()}};
    for (size_t i = 0; i < messages.size(); ++i) {
      auto message = JinjaMessage(messages[i]);
      if (!message.ok()) return message.status().WithPrefix("message " + std::to_string(i));
      vars["messages"].push_back(std::move(message).value());
    }
    if (!tools_json.empty()) {
      auto tools = nlohmann::ordered_json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
      if (!tools.is_array()) return InvalidArgumentError("tools must be a JSON array");
      vars["tools"] = std::move(tools);
    }
    auto text = jinja_->Render(vars);
    if (!text.ok()) return text.status().WithPrefix("chat template");
    return text;
  }
  for (size_t i = 0; i < messages.size(); ++i) {
    const std::string& role = messages[i].role;
    if (role != "system" && role != "user" && role != "assistant") {
      std::string message = "message ";
      message += std::to_string(i);
      message += " has role \"";
      message += role;
      message += "\"; chat templates take system, user and assistant";
      return InvalidArgumentError(std::move(message));
    }
  }
  std::string out;
  switch (family_) {
    case Family::kChatml:
      AppendChatml(messages, add_generation_prompt, out);
      break;
    case Family::kLlama3:
    case Family::kLlama31:
      AppendLlama3(messages, add_generation_prompt, family_ == Family::kLlama31, out);
      break;
    case Family::kLlama2:
      // The [INST] families end a user turn where the answer starts, so they
      // have no separate generation prompt.
      RETURN_IF_ERROR(CheckAlternating(messages, name()));
      AppendLlama2(messages, eos_text_, out);
      break;
    case Family::kMistralV1:
      RETURN_IF_ERROR(CheckAlternating(messages, name()));
      AppendMistralV1(messages, eos_text_, out);
      break;
    case Family::kMistralV3:
    case Family::kMistralV3Tekken:
      RETURN_IF_ERROR(CheckAlternating(messages, name()));
      AppendMistralV3(messages, family_ == Family::kMistralV3Tekken, eos_text_, out);
      break;
    case Family::kMistralV7:
    case Family::kMistralV7Tekken:
      AppendMistralV7(messages, family_ == Family::kMistralV7Tekken, eos_text_, out);
      break;
    case Family::kZephyr:
      AppendRoleMarkerTurns(messages, add_generation_prompt, /*skip_empty_system=*/false, eos_text_,
                            out);
      break;
    case Family::kPhi3:
      AppendRoleMarkerTurns(messages, add_generation_prompt, /*skip_empty_system=*/true, "<|end|>",
                            out);
      break;
    case Family::kJinja:
      break;  // rendered above
  }
  return out;
}

}  // namespace kvmesh::router
