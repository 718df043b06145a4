#include "router/chat_relay.h"

#include <random>
#include <string>

#include "router/chat/tool_call_grammar.h"

namespace kvmesh::router {
namespace {

// Tool-call ids: Mistral's templates take exactly nine letters and digits;
// the others any string, so "call_" and 24 of them, as OpenAI's look.
std::string MakeToolCallId(ToolCallFormat format) {
  static constexpr std::string_view kAlphabet =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  thread_local std::mt19937_64 rng{std::random_device{}()};
  std::uniform_int_distribution<size_t> pick(0, kAlphabet.size() - 1);
  const bool mistral = format == ToolCallFormat::kMistral;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i) id += kAlphabet[pick(rng)];
  return id;
}

AssistantOutputParser::Options ParserOptions(const ChatTemplate& chat_template,
                                             std::string_view prompt, std::string_view tools_json,
                                             bool forced_call) {
  AssistantOutputParser::Options options;
  options.syntax = chat_template.output_syntax();
  options.starts_in_reasoning = !forced_call && PromptOpensReasoning(prompt);
  if (forced_call) options.syntax.tool_calls = ForcedCallFormat(options.syntax.tool_calls);
  options.make_id = MakeToolCallId;
  if (!tools_json.empty()) {
    auto tools = nlohmann::ordered_json::parse(tools_json, nullptr, /*allow_exceptions=*/false);
    if (tools.is_array()) options.tools = std::move(tools);
  }
  return options;
}

}  // namespace

ChatRelay::ChatRelay(const ChatTemplate& chat_template, std::string_view prompt,
                     std::string_view tools_json, bool forced_call)
    : parser_(ParserOptions(chat_template, prompt, tools_json, forced_call)) {}

std::vector<int32_t> ChatRelay::MarkerTokens(const Tokenizer& tokenizer,
                                             const OutputSyntax& syntax) {
  std::vector<int32_t> ids;
  for (std::string_view marker : syntax.Markers()) {
    const std::vector<int32_t> encoded =
        tokenizer.Encode(marker, /*add_special=*/false, /*parse_special=*/true);
    if (encoded.size() == 1) ids.push_back(encoded[0]);
  }
  return ids;
}

v1::GenerateTextResponse ChatRelay::Relay(const v1::GenerateTextResponse& message) {
  v1::GenerateTextResponse out = message;
  AssistantDelta delta = parser_.Feed(message.text());
  const bool last = message.finish_reason() != v1::FINISH_REASON_UNSPECIFIED;
  if (last) {
    AssistantDelta rest = parser_.Finish();
    delta.text += rest.text;
    delta.reasoning += rest.reasoning;
    for (ParsedToolCall& call : rest.tool_calls) delta.tool_calls.push_back(std::move(call));
  }
  out.set_text(std::move(delta.text));
  out.set_reasoning(std::move(delta.reasoning));
  for (ParsedToolCall& call : delta.tool_calls) {
    v1::ToolCall* c = out.add_tool_calls();
    c->set_id(std::move(call.id));
    c->set_name(std::move(call.name));
    c->set_arguments_json(std::move(call.arguments_json));
  }
  if (last && message.finish_reason() == v1::FINISH_REASON_STOP && parser_.num_tool_calls() > 0) {
    out.set_finish_reason(v1::FINISH_REASON_TOOL_CALLS);
  }
  return out;
}

}  // namespace kvmesh::router
