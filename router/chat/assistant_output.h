// AssistantOutputParser: splits a chat model's generated text into what an
// API returns as separate parts: the answer text, the reasoning written
// between <think> and </think>, and the tool calls, in the format the
// model's chat template teaches it.
//
// Formats (ToolCallFormat), by the marker DetectOutputSyntax() finds in the
// template:
//   kHermesJson   <tool_call>{"name": …, "arguments": {…}}</tool_call>
//                 (Hermes 2 Pro, Qwen2.5, Qwen3, QwQ, Granite, …)
//   kXmlFunction  <tool_call><function=NAME><parameter=KEY>value</parameter>
//                 …</function></tool_call> (Qwen3-Coder, Qwen3.5, Nemotron 3).
//                 A value is a string unless the tool's schema gives the
//                 parameter another type; then it is read as JSON.
//   kLlama3Json   the whole answer is {"name": …, "parameters": {…}},
//                 optionally after <|python_tag|> (Llama 3.1, 3.2, 3.3).
//   kMistral      [TOOL_CALLS]NAME[ARGS]{…} or [TOOL_CALLS]NAME[CALL_ID]ID
//                 [ARGS]{…} per call (Mistral Small 3.2, Ministral 3,
//                 Devstral), or [TOOL_CALLS][{"name", "arguments"}, …] (v3).
// A call is taken only when it parses and names an offered tool; anything
// else, however much it looks like a call, stays answer text. Calls are
// parsed only when the request offered tools; reasoning only when the
// template writes </think>.
//
// Streaming: Feed() returns what is certain so far. Text that might be the
// start of a marker is held back until the next Feed() decides it; a call is
// returned whole once its end is seen (kLlama3Json and kMistral calls end
// with the generation, so they come from Finish()). Leading whitespace right
// after </think> and after a call is dropped.
//
// One parser per generation, used by one thread.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace kvmesh::router {

enum class ToolCallFormat { kNone, kHermesJson, kXmlFunction, kLlama3Json, kMistral };

std::string_view ToolCallFormatName(ToolCallFormat format);

struct OutputSyntax {
  ToolCallFormat tool_calls = ToolCallFormat::kNone;
  bool reasoning = false;  // <think>…</think>

  // The markers of this syntax that a tokenizer may hold as control tokens
  // (whose text the worker must then be asked to show).
  std::vector<std::string_view> Markers() const;
};

// The syntax a chat template's source teaches its model.
OutputSyntax DetectOutputSyntax(std::string_view template_source);

// True when a rendered prompt leaves the model inside its reasoning (the
// template's generation prompt ends with an open <think>).
bool PromptOpensReasoning(std::string_view prompt);

struct ParsedToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;  // a JSON object
};

struct AssistantDelta {
  std::string text;
  std::string reasoning;
  std::vector<ParsedToolCall> tool_calls;
  bool empty() const { return text.empty() && reasoning.empty() && tool_calls.empty(); }
};

class AssistantOutputParser {
 public:
  struct Options {
    OutputSyntax syntax;
    // The offered tools in the templates' format ([{type: function,
    // function: {name, parameters}}]); none: calls are not parsed.
    nlohmann::ordered_json tools = nlohmann::ordered_json::array();
    bool starts_in_reasoning = false;  // PromptOpensReasoning(prompt)
    // Makes the id of a call the model gave none; must be unique per call.
    std::function<std::string(ToolCallFormat)> make_id;
  };

  explicit AssistantOutputParser(Options options);

  AssistantDelta Feed(std::string_view text);
  // Ends the generation: everything held back is decided.
  AssistantDelta Finish();

  int num_tool_calls() const { return num_tool_calls_; }

 private:
  enum class State {
    kText,
    kReasoning,
    kToolCall,  // inside <tool_call>, waiting for </tool_call>
    kUntilEnd,  // a call that lasts to the end of the generation
  };

  void Drain(bool final, AssistantDelta* out);
  void EmitText(std::string_view text, AssistantDelta* out);
  // Parses one call body of the syntax's format; false when it is not one.
  bool ParseCalls(std::string_view body, std::vector<ParsedToolCall>* calls) const;
  bool ParseJsonCall(std::string_view body, ParsedToolCall* call) const;
  bool ParseXmlCall(std::string_view body, ParsedToolCall* call) const;
  bool ParseMistralCalls(std::string_view body, std::vector<ParsedToolCall>* calls) const;
  const nlohmann::ordered_json* FindTool(std::string_view name) const;
  void AddCalls(std::vector<ParsedToolCall> calls, AssistantDelta* out);

  Options options_;
  bool tools_offered_;
  State state_;
  std::string pending_;      // text not yet decided
  std::string open_marker_;  // the marker that opened kToolCall/kUntilEnd
  bool trim_leading_ = false;
  bool text_seen_ = false;  // non-whitespace answer text was emitted
  int num_tool_calls_ = 0;
};

}  // namespace kvmesh::router
