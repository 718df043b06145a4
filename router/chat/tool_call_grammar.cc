#include "router/chat/tool_call_grammar.h"

#include "common/grammar/grammar.h"
#include "common/grammar/json_schema.h"

namespace kvmesh::router {

ToolCallFormat ForcedCallFormat(ToolCallFormat format) {
  return format == ToolCallFormat::kNone ? ToolCallFormat::kHermesJson : format;
}

StatusOr<std::string> ToolCallGrammar(ToolCallFormat format, const nlohmann::ordered_json& tools,
                                      std::string_view only) {
  using grammar::GbnfLiteral;
  format = ForcedCallFormat(format);
  std::string root = "root ::= ";
  std::string rules;
  int count = 0;
  for (const auto& tool : tools) {
    if (!tool.is_object() || !tool.contains("function")) continue;
    const auto& function = tool["function"];
    if (!function.is_object() || !function.contains("name") || !function["name"].is_string()) {
      continue;
    }
    const std::string name = function["name"].get<std::string>();
    if (name.empty() || (!only.empty() && name != only)) continue;
    const std::string entry = "tool" + std::to_string(count);
    nlohmann::json schema = nlohmann::json::parse(
        function.contains("parameters") ? function["parameters"].dump() : "{\"type\":\"object\"}");
    if (schema.is_object() && schema.empty()) schema = {{"type", "object"}};
    auto args = grammar::JsonSchemaRules(schema, entry + "-args");
    if (!args.ok()) return args.status().WithPrefix("tool \"" + name + "\" parameters");
    rules += *args;
    const std::string quoted = nlohmann::json(name).dump();
    std::string call;
    switch (format) {
      case ToolCallFormat::kLlama3Json:
        call = GbnfLiteral("{\"name\": " + quoted + ", \"parameters\": ") + " " + entry + "-args " +
               GbnfLiteral("}");
        break;
      case ToolCallFormat::kMistral:
        call = GbnfLiteral("[TOOL_CALLS]" + name + "[ARGS]") + " " + entry + "-args";
        break;
      default:
        call = GbnfLiteral("<tool_call>\n{\"name\": " + quoted + ", \"arguments\": ") + " " +
               entry + "-args " + GbnfLiteral("}\n</tool_call>");
        break;
    }
    rules += entry + " ::= " + call + "\n";
    root += (count ? " | " : "") + entry;
    ++count;
  }
  if (count == 0) {
    if (!only.empty()) {
      return InvalidArgumentError("tool_choice names the tool \"" + std::string(only) +
                                  "\", which is not among the offered tools");
    }
    return InvalidArgumentError("tool_choice requires a tool call, but no tools are offered");
  }
  std::string gbnf = root + "\n" + rules + grammar::JsonPrimitivesGbnf();
  auto parsed = grammar::Grammar::ParseGbnf(gbnf);
  if (!parsed.ok()) return parsed.status().WithPrefix("forced tool call");
  return gbnf;
}

}  // namespace kvmesh::router
