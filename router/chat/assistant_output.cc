#include "router/chat/assistant_output.h"

#include <algorithm>
#include <utility>

namespace kvmesh::router {
namespace {

using nlohmann::ordered_json;

constexpr std::string_view kThinkOpen = "<think>";
constexpr std::string_view kThinkClose = "</think>";
constexpr std::string_view kToolCallOpen = "<tool_call>";
constexpr std::string_view kToolCallClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";
constexpr std::string_view kFunctionOpen = "<function=";
constexpr std::string_view kFunctionClose = "</function>";
constexpr std::string_view kParameterOpen = "<parameter=";
constexpr std::string_view kParameterClose = "</parameter>";

bool IsSpace(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

bool AllSpace(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return IsSpace(c); });
}

bool Contains(std::string_view haystack, std::string_view needle) {
  return haystack.find(needle) != std::string_view::npos;
}

// The length of the longest proper prefix of `marker` that `text` ends with:
// text that may become the marker once more arrives.
size_t PartialMarkerSuffix(std::string_view text, std::string_view marker) {
  const size_t longest = std::min(text.size(), marker.size() - 1);
  for (size_t k = longest; k > 0; --k) {
    if (text.substr(text.size() - k) == marker.substr(0, k)) return k;
  }
  return 0;
}

// Parses `text` as one JSON value with nothing but whitespace around it.
bool ParseJson(std::string_view text, ordered_json* out) {
  *out = ordered_json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  return !out->is_discarded();
}

// Arguments as the formats give them: an object, or a string holding one.
bool ArgumentsObject(const ordered_json& value, std::string* json_text) {
  if (value.is_string()) {
    ordered_json parsed;
    if (!ParseJson(value.get_ref<const std::string&>(), &parsed) || !parsed.is_object()) {
      return false;
    }
    *json_text = parsed.dump();
    return true;
  }
  if (!value.is_object()) return false;
  *json_text = value.dump();
  return true;
}

}  // namespace

std::string_view ToolCallFormatName(ToolCallFormat format) {
  switch (format) {
    case ToolCallFormat::kNone:
      return "none";
    case ToolCallFormat::kHermesJson:
      return "hermes-json";
    case ToolCallFormat::kXmlFunction:
      return "xml-function";
    case ToolCallFormat::kLlama3Json:
      return "llama3-json";
    case ToolCallFormat::kMistral:
      return "mistral";
  }
  return "none";
}

std::vector<std::string_view> OutputSyntax::Markers() const {
  std::vector<std::string_view> markers;
  auto add = [&markers](std::initializer_list<std::string_view> more) {
    for (std::string_view m : more) markers.push_back(m);
  };
  if (reasoning) add({kThinkOpen, kThinkClose});
  switch (tool_calls) {
    case ToolCallFormat::kHermesJson:
    case ToolCallFormat::kXmlFunction:
      add({kToolCallOpen, kToolCallClose});
      break;
    case ToolCallFormat::kLlama3Json:
      add({kPythonTag});
      break;
    case ToolCallFormat::kMistral:
      add({kMistralCalls, kMistralArgs, kMistralCallId});
      break;
    case ToolCallFormat::kNone:
      break;
  }
  return markers;
}

OutputSyntax DetectOutputSyntax(std::string_view source) {
  OutputSyntax syntax;
  syntax.reasoning = Contains(source, kThinkClose);
  if (Contains(source, kToolCallOpen)) {
    syntax.tool_calls = Contains(source, kFunctionOpen) ? ToolCallFormat::kXmlFunction
                                                        : ToolCallFormat::kHermesJson;
  } else if (Contains(source, kMistralCalls)) {
    syntax.tool_calls = ToolCallFormat::kMistral;
  } else if (Contains(source, "<|start_header_id|>") &&
             (Contains(source, kPythonTag) || Contains(source, "\"parameters\""))) {
    syntax.tool_calls = ToolCallFormat::kLlama3Json;
  }
  return syntax;
}

bool PromptOpensReasoning(std::string_view prompt) {
  prompt = Trim(prompt);
  return prompt.size() >= kThinkOpen.size() &&
         prompt.substr(prompt.size() - kThinkOpen.size()) == kThinkOpen;
}

AssistantOutputParser::AssistantOutputParser(Options options)
    : options_(std::move(options)),
      tools_offered_(options_.tools.is_array() && !options_.tools.empty() &&
                     options_.syntax.tool_calls != ToolCallFormat::kNone),
      state_(options_.syntax.reasoning && options_.starts_in_reasoning ? State::kReasoning
                                                                       : State::kText) {
  if (state_ == State::kReasoning) trim_leading_ = true;
  if (!options_.make_id) {
    options_.make_id = [n = 0](ToolCallFormat) mutable { return "call_" + std::to_string(n++); };
  }
}

AssistantDelta AssistantOutputParser::Feed(std::string_view text) {
  pending_ += text;
  AssistantDelta out;
  Drain(/*final=*/false, &out);
  return out;
}

AssistantDelta AssistantOutputParser::Finish() {
  AssistantDelta out;
  Drain(/*final=*/true, &out);
  return out;
}

void AssistantOutputParser::EmitText(std::string_view text, AssistantDelta* out) {
  if (trim_leading_) {
    while (!text.empty() && IsSpace(text.front())) text.remove_prefix(1);
    if (text.empty()) return;
    trim_leading_ = false;
  }
  if (!AllSpace(text)) text_seen_ = true;
  out->text += text;
}

void AssistantOutputParser::Drain(bool final, AssistantDelta* out) {
  for (;;) {
    switch (state_) {
      case State::kReasoning: {
        std::string_view view = pending_;
        if (trim_leading_) {
          while (!view.empty() && IsSpace(view.front())) view.remove_prefix(1);
          if (!view.empty()) trim_leading_ = false;
        }
        const size_t end = view.find(kThinkClose);
        if (end != std::string_view::npos) {
          std::string_view reasoning = view.substr(0, end);
          while (!reasoning.empty() && IsSpace(reasoning.back())) reasoning.remove_suffix(1);
          out->reasoning += reasoning;
          pending_.erase(0, pending_.size() - view.size() + end + kThinkClose.size());
          state_ = State::kText;
          trim_leading_ = true;
          continue;
        }
        size_t cut = final ? view.size() : view.size() - PartialMarkerSuffix(view, kThinkClose);
        // Whitespace just before </think> is not reasoning: hold it back.
        while (!final && cut > 0 && IsSpace(view[cut - 1])) --cut;
        out->reasoning += view.substr(0, cut);
        pending_.erase(0, pending_.size() - view.size() + cut);
        return;
      }
      case State::kText: {
        if (tools_offered_ && options_.syntax.tool_calls == ToolCallFormat::kLlama3Json &&
            !text_seen_) {
          // A Llama 3 call is the whole answer: an object from the start.
          const size_t first = pending_.find_first_not_of(" \n\t\r");
          if (first == std::string::npos && !final) return;
          if (first != std::string::npos && pending_[first] == '{') {
            pending_.erase(0, first);
            open_marker_.clear();
            state_ = State::kUntilEnd;
            continue;
          }
        }
        std::vector<std::pair<std::string_view, State>> starts;
        if (options_.syntax.reasoning) starts.emplace_back(kThinkOpen, State::kReasoning);
        if (tools_offered_) {
          switch (options_.syntax.tool_calls) {
            case ToolCallFormat::kHermesJson:
            case ToolCallFormat::kXmlFunction:
              starts.emplace_back(kToolCallOpen, State::kToolCall);
              break;
            case ToolCallFormat::kLlama3Json:
              starts.emplace_back(kPythonTag, State::kUntilEnd);
              break;
            case ToolCallFormat::kMistral:
              starts.emplace_back(kMistralCalls, State::kUntilEnd);
              break;
            case ToolCallFormat::kNone:
              break;
          }
        }
        size_t best = std::string::npos;
        std::string_view marker;
        State next = State::kText;
        for (const auto& [m, state] : starts) {
          const size_t at = pending_.find(m);
          if (at < best) {
            best = at;
            marker = m;
            next = state;
          }
        }
        if (best != std::string::npos) {
          EmitText(std::string_view(pending_).substr(0, best), out);
          pending_.erase(0, best + marker.size());
          open_marker_ = std::string(marker);
          state_ = next;
          if (next == State::kReasoning) trim_leading_ = true;
          continue;
        }
        size_t keep = 0;
        if (!final) {
          for (const auto& [m, state] : starts) {
            keep = std::max(keep, PartialMarkerSuffix(pending_, m));
          }
        }
        EmitText(std::string_view(pending_).substr(0, pending_.size() - keep), out);
        pending_.erase(0, pending_.size() - keep);
        return;
      }
      case State::kToolCall: {
        const size_t end = pending_.find(kToolCallClose);
        if (end == std::string::npos && !final) return;
        const std::string_view body =
            std::string_view(pending_).substr(0, end == std::string::npos ? pending_.size() : end);
        std::vector<ParsedToolCall> calls;
        if (ParseCalls(body, &calls)) {
          AddCalls(std::move(calls), out);
        } else {
          std::string text = open_marker_;
          text += body;
          if (end != std::string::npos) text += kToolCallClose;
          EmitText(text, out);
        }
        pending_.erase(0, end == std::string::npos ? pending_.size() : end + kToolCallClose.size());
        state_ = State::kText;
        continue;
      }
      case State::kUntilEnd: {
        if (!final) return;
        std::vector<ParsedToolCall> calls;
        if (ParseCalls(pending_, &calls)) {
          AddCalls(std::move(calls), out);
        } else {
          EmitText(open_marker_ + pending_, out);
        }
        pending_.clear();
        state_ = State::kText;
        return;
      }
    }
  }
}

void AssistantOutputParser::AddCalls(std::vector<ParsedToolCall> calls, AssistantDelta* out) {
  for (ParsedToolCall& call : calls) {
    if (call.id.empty()) call.id = options_.make_id(options_.syntax.tool_calls);
    out->tool_calls.push_back(std::move(call));
    ++num_tool_calls_;
  }
  trim_leading_ = true;
}

const ordered_json* AssistantOutputParser::FindTool(std::string_view name) const {
  for (const ordered_json& tool : options_.tools) {
    if (!tool.is_object()) continue;
    auto function = tool.find("function");
    if (function == tool.end() || !function->is_object()) continue;
    auto n = function->find("name");
    if (n != function->end() && n->is_string() && n->get_ref<const std::string&>() == name) {
      return &*function;
    }
  }
  return nullptr;
}

bool AssistantOutputParser::ParseCalls(std::string_view body,
                                       std::vector<ParsedToolCall>* calls) const {
  switch (options_.syntax.tool_calls) {
    case ToolCallFormat::kHermesJson:
    case ToolCallFormat::kLlama3Json: {
      ParsedToolCall call;
      if (!ParseJsonCall(body, &call)) return false;
      calls->push_back(std::move(call));
      return true;
    }
    case ToolCallFormat::kXmlFunction: {
      ParsedToolCall call;
      // Qwen3.5's models sometimes write JSON inside <tool_call> too.
      if (!ParseXmlCall(body, &call) && !ParseJsonCall(body, &call)) return false;
      calls->push_back(std::move(call));
      return true;
    }
    case ToolCallFormat::kMistral:
      return ParseMistralCalls(body, calls);
    case ToolCallFormat::kNone:
      return false;
  }
  return false;
}

bool AssistantOutputParser::ParseJsonCall(std::string_view body, ParsedToolCall* call) const {
  ordered_json value;
  if (!ParseJson(Trim(body), &value) || !value.is_object()) return false;
  auto name = value.find("name");
  if (name == value.end() || !name->is_string()) return false;
  call->name = name->get<std::string>();
  if (FindTool(call->name) == nullptr) return false;
  auto args = value.find("arguments");
  if (args == value.end()) args = value.find("parameters");
  if (args == value.end()) {
    call->arguments_json = "{}";
    return true;
  }
  return ArgumentsObject(*args, &call->arguments_json);
}

bool AssistantOutputParser::ParseXmlCall(std::string_view body, ParsedToolCall* call) const {
  std::string_view rest = Trim(body);
  if (rest.substr(0, kFunctionOpen.size()) != kFunctionOpen) return false;
  rest.remove_prefix(kFunctionOpen.size());
  const size_t name_end = rest.find('>');
  if (name_end == std::string_view::npos) return false;
  call->name = std::string(Trim(rest.substr(0, name_end)));
  rest.remove_prefix(name_end + 1);
  const ordered_json* tool = FindTool(call->name);
  if (tool == nullptr) return false;
  const ordered_json* properties = nullptr;
  if (auto params = tool->find("parameters"); params != tool->end() && params->is_object()) {
    if (auto p = params->find("properties"); p != params->end() && p->is_object()) {
      properties = &*p;
    }
  }
  ordered_json args = ordered_json::object();
  for (;;) {
    rest = Trim(rest);
    if (rest.substr(0, kFunctionClose.size()) == kFunctionClose) {
      rest.remove_prefix(kFunctionClose.size());
      break;
    }
    if (rest.substr(0, kParameterOpen.size()) != kParameterOpen) return false;
    rest.remove_prefix(kParameterOpen.size());
    const size_t key_end = rest.find('>');
    if (key_end == std::string_view::npos) return false;
    const std::string key(Trim(rest.substr(0, key_end)));
    rest.remove_prefix(key_end + 1);
    const size_t value_end = rest.find(kParameterClose);
    if (value_end == std::string_view::npos) return false;
    std::string_view value = rest.substr(0, value_end);
    rest.remove_prefix(value_end + kParameterClose.size());
    // The template writes each value between newlines.
    if (!value.empty() && value.front() == '\n') value.remove_prefix(1);
    if (!value.empty() && value.back() == '\n') value.remove_suffix(1);
    std::string type;
    if (properties != nullptr) {
      if (auto p = properties->find(key); p != properties->end() && p->is_object()) {
        if (auto t = p->find("type"); t != p->end() && t->is_string()) type = t->get<std::string>();
      }
    }
    ordered_json parsed;
    if (!type.empty() && type != "string" && ParseJson(value, &parsed)) {
      args[key] = std::move(parsed);
    } else {
      args[key] = std::string(value);
    }
  }
  if (!Trim(rest).empty()) return false;
  call->arguments_json = args.dump();
  return true;
}

bool AssistantOutputParser::ParseMistralCalls(std::string_view body,
                                              std::vector<ParsedToolCall>* calls) const {
  std::vector<std::string_view> pieces;
  for (;;) {
    const size_t next = body.find(kMistralCalls);
    pieces.push_back(body.substr(0, next));
    if (next == std::string_view::npos) break;
    body.remove_prefix(next + kMistralCalls.size());
  }
  for (std::string_view piece : pieces) {
    piece = Trim(piece);
    if (piece.empty()) return false;
    if (piece.front() == '[') {
      // v3: a JSON array of {"name", "arguments", "id"?}.
      ordered_json list;
      if (!ParseJson(piece, &list) || !list.is_array() || list.empty()) return false;
      for (const ordered_json& item : list) {
        ParsedToolCall call;
        if (!ParseJsonCall(item.dump(), &call)) return false;
        if (auto id = item.find("id"); id != item.end() && id->is_string()) {
          call.id = id->get<std::string>();
        }
        calls->push_back(std::move(call));
      }
      continue;
    }
    const size_t args_at = piece.find(kMistralArgs);
    if (args_at == std::string_view::npos) return false;
    ParsedToolCall call;
    std::string_view head = piece.substr(0, args_at);
    if (const size_t id_at = head.find(kMistralCallId); id_at != std::string_view::npos) {
      call.id = std::string(Trim(head.substr(id_at + kMistralCallId.size())));
      head = head.substr(0, id_at);
    }
    call.name = std::string(Trim(head));
    if (FindTool(call.name) == nullptr) return false;
    ordered_json args;
    if (!ParseJson(Trim(piece.substr(args_at + kMistralArgs.size())), &args)) return false;
    if (!ArgumentsObject(args, &call.arguments_json)) return false;
    calls->push_back(std::move(call));
  }
  return true;
}

}  // namespace kvmesh::router
