#include "router/chat/assistant_output.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

namespace kvmesh::router {
namespace {

using nlohmann::ordered_json;

ordered_json WeatherTools() {
  return ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "days": {"type": "integer"},
        "units": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "list_files", "parameters": {}}}])");
}

AssistantOutputParser::Options OptionsFor(ToolCallFormat format, bool reasoning = false) {
  AssistantOutputParser::Options options;
  options.syntax.tool_calls = format;
  options.syntax.reasoning = reasoning;
  options.tools = WeatherTools();
  return options;
}

void Append(AssistantDelta* total, AssistantDelta part) {
  total->text += part.text;
  total->reasoning += part.reasoning;
  for (auto& call : part.tool_calls) total->tool_calls.push_back(std::move(call));
}

// Feeds `text` one byte at a time, as the slowest stream would, then
// finishes.
AssistantDelta ParseByteByByte(AssistantOutputParser::Options options, std::string_view text) {
  AssistantOutputParser parser(std::move(options));
  AssistantDelta total;
  for (char c : text) Append(&total, parser.Feed(std::string_view(&c, 1)));
  Append(&total, parser.Finish());
  return total;
}

AssistantDelta ParseWhole(AssistantOutputParser::Options options, std::string_view text) {
  AssistantOutputParser parser(std::move(options));
  AssistantDelta total = parser.Feed(text);
  Append(&total, parser.Finish());
  return total;
}

TEST(AssistantOutputTest, DetectsEachFormatFromRealTemplates) {
  struct Case {
    const char* file;
    ToolCallFormat format;
    bool reasoning;
  };
  const Case cases[] = {
      {"Qwen-Qwen3-0.6B.jinja", ToolCallFormat::kHermesJson, true},
      {"Qwen-Qwen2.5-7B-Instruct.jinja", ToolCallFormat::kHermesJson, false},
      {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use.jinja", ToolCallFormat::kHermesJson, false},
      {"Qwen3.5-4B.jinja", ToolCallFormat::kXmlFunction, true},
      {"meta-llama-Llama-3.1-8B-Instruct.jinja", ToolCallFormat::kLlama3Json, false},
      {"meta-llama-Llama-3.2-3B-Instruct.jinja", ToolCallFormat::kLlama3Json, false},
      {"Mistral-Small-3.2-24B-Instruct-2506.jinja", ToolCallFormat::kMistral, false},
      {"unsloth-mistral-Devstral-Small-2507.jinja", ToolCallFormat::kMistral, false},
      {"deepseek-ai-DeepSeek-R1-Distill-Qwen-32B.jinja", ToolCallFormat::kNone, true},
  };
  for (const Case& c : cases) {
    std::ifstream in(std::string(KVMESH_SHARED_DIR) + "/chat-templates/templates/" + c.file);
    if (!in) GTEST_SKIP() << "../shared/chat-templates is not on this machine";
    std::stringstream source;
    source << in.rdbuf();
    const OutputSyntax syntax = DetectOutputSyntax(source.str());
    EXPECT_EQ(ToolCallFormatName(syntax.tool_calls), ToolCallFormatName(c.format)) << c.file;
    EXPECT_EQ(syntax.reasoning, c.reasoning) << c.file;
  }
}

TEST(AssistantOutputTest, HermesCallBetweenTextStreamedByteByByte) {
  const std::string output =
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": "
      "\"list_files\", \"arguments\": \"{}\"}\n</tool_call>";
  for (const AssistantDelta& got :
       {ParseByteByByte(OptionsFor(ToolCallFormat::kHermesJson), output),
        ParseWhole(OptionsFor(ToolCallFormat::kHermesJson), output)}) {
    EXPECT_EQ(got.text, "Let me check.\n");
    ASSERT_EQ(got.tool_calls.size(), 2u);
    EXPECT_EQ(got.tool_calls[0].name, "get_weather");
    EXPECT_EQ(got.tool_calls[0].arguments_json, R"({"city":"Paris","days":2})");
    EXPECT_EQ(got.tool_calls[0].id, "call_0");
    EXPECT_EQ(got.tool_calls[1].name, "list_files");
    EXPECT_EQ(got.tool_calls[1].arguments_json, "{}");
    EXPECT_EQ(got.tool_calls[1].id, "call_1");
  }
}

TEST(AssistantOutputTest, ACallIsReturnedTheMomentItsEndTagArrives) {
  AssistantOutputParser parser(OptionsFor(ToolCallFormat::kHermesJson));
  EXPECT_EQ(parser.Feed("Hi <tool").text, "Hi ");  // "<tool" may open a call
  AssistantDelta mid = parser.Feed("_call>{\"name\": \"list_files\"}");
  EXPECT_TRUE(mid.empty());
  AssistantDelta end = parser.Feed("</tool_call>");
  ASSERT_EQ(end.tool_calls.size(), 1u);
  EXPECT_EQ(end.tool_calls[0].name, "list_files");
  EXPECT_EQ(parser.num_tool_calls(), 1);
}

TEST(AssistantOutputTest, MalformedOrUnknownCallsStayText) {
  const std::string bad_json =
      "<tool_call>{\"name\": \"get_weather\", \"arguments\": {</tool_call>";
  EXPECT_EQ(ParseWhole(OptionsFor(ToolCallFormat::kHermesJson), bad_json).text, bad_json);
  const std::string unknown = "<tool_call>{\"name\": \"rm_rf\", \"arguments\": {}}</tool_call>";
  AssistantDelta got = ParseWhole(OptionsFor(ToolCallFormat::kHermesJson), unknown);
  EXPECT_EQ(got.text, unknown);
  EXPECT_TRUE(got.tool_calls.empty());
  // Cut off by max_tokens inside the call: the partial call is text.
  const std::string cut = "<tool_call>{\"name\": \"get_weather\", \"argu";
  EXPECT_EQ(ParseByteByByte(OptionsFor(ToolCallFormat::kHermesJson), cut).text, cut);
  // A marker prefix at the very end is text too.
  EXPECT_EQ(ParseByteByByte(OptionsFor(ToolCallFormat::kHermesJson), "a <tool_ca").text,
            "a <tool_ca");
}

TEST(AssistantOutputTest, NoToolsOfferedMeansNoCallsParsed) {
  AssistantOutputParser::Options options = OptionsFor(ToolCallFormat::kHermesJson);
  options.tools = ordered_json::array();
  const std::string output = "<tool_call>{\"name\": \"get_weather\"}</tool_call>";
  AssistantDelta got = ParseWhole(options, output);
  EXPECT_EQ(got.text, output);
  EXPECT_TRUE(got.tool_calls.empty());
}

TEST(AssistantOutputTest, ReasoningThenAnswer) {
  const std::string output = "<think>\nThe user greets me.\n</think>\n\nHello!";
  AssistantDelta got = ParseByteByByte(OptionsFor(ToolCallFormat::kHermesJson, true), output);
  EXPECT_EQ(got.reasoning, "The user greets me.");
  EXPECT_EQ(got.text, "Hello!");
  // The prompt opened <think> itself (DeepSeek-R1, QwQ): the output starts
  // inside the reasoning.
  AssistantOutputParser::Options open = OptionsFor(ToolCallFormat::kNone, true);
  open.starts_in_reasoning = true;
  got = ParseByteByByte(open, "Hmm, sum.\n</think>\n\n4");
  EXPECT_EQ(got.reasoning, "Hmm, sum.");
  EXPECT_EQ(got.text, "4");
  EXPECT_TRUE(PromptOpensReasoning("<|im_start|>assistant\n<think>\n"));
  EXPECT_FALSE(PromptOpensReasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n"));
  // Without the syntax, <think> is ordinary text.
  EXPECT_EQ(ParseWhole(OptionsFor(ToolCallFormat::kNone), output).text, output);
}

TEST(AssistantOutputTest, ReasoningThenCall) {
  const std::string output =
      "<think>\nNeed weather.\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", "
      "\"arguments\": {\"city\": \"Oslo\"}}\n</tool_call>";
  AssistantDelta got = ParseByteByByte(OptionsFor(ToolCallFormat::kHermesJson, true), output);
  EXPECT_EQ(got.reasoning, "Need weather.");
  EXPECT_EQ(got.text, "");
  ASSERT_EQ(got.tool_calls.size(), 1u);
  EXPECT_EQ(got.tool_calls[0].arguments_json, R"({"city":"Oslo"})");
}

TEST(AssistantOutputTest, XmlFunctionValuesFollowTheSchema) {
  const std::string output =
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nNew York\n</parameter>\n"
      "<parameter=days>\n3\n</parameter>\n<parameter=units>\n42\n</parameter>\n</function>\n"
      "</tool_call>";
  AssistantDelta got = ParseByteByByte(OptionsFor(ToolCallFormat::kXmlFunction), output);
  EXPECT_EQ(got.text, "");
  ASSERT_EQ(got.tool_calls.size(), 1u);
  EXPECT_EQ(got.tool_calls[0].name, "get_weather");
  // "units" is a string in the schema: 42 stays "42".
  EXPECT_EQ(got.tool_calls[0].arguments_json, R"({"city":"New York","days":3,"units":"42"})");
  const std::string broken = "<tool_call>\n<function=get_weather>\n<parameter=city>\nRome";
  EXPECT_EQ(ParseWhole(OptionsFor(ToolCallFormat::kXmlFunction), broken).text, broken);
}

TEST(AssistantOutputTest, Llama3JsonIsTheWholeAnswer) {
  const std::string output = "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Rome\"}}";
  AssistantDelta got = ParseByteByByte(OptionsFor(ToolCallFormat::kLlama3Json), output);
  EXPECT_EQ(got.text, "");
  ASSERT_EQ(got.tool_calls.size(), 1u);
  EXPECT_EQ(got.tool_calls[0].arguments_json, R"({"city":"Rome"})");
  got = ParseWhole(OptionsFor(ToolCallFormat::kLlama3Json), "<|python_tag|>" + output);
  ASSERT_EQ(got.tool_calls.size(), 1u);
  // An answer that merely starts with a brace is text.
  const std::string prose = "{braces} are used in C.";
  EXPECT_EQ(ParseByteByByte(OptionsFor(ToolCallFormat::kLlama3Json), prose).text, prose);
  // Text first: a later object is not a call.
  const std::string later = "Here: " + output;
  EXPECT_EQ(ParseWhole(OptionsFor(ToolCallFormat::kLlama3Json), later).text, later);
}

TEST(AssistantOutputTest, MistralFormats) {
  AssistantDelta got = ParseByteByByte(
      OptionsFor(ToolCallFormat::kMistral),
      "[TOOL_CALLS]get_weather[CALL_ID]a1b2c3d4e[ARGS]{\"city\": \"Lyon\"}[TOOL_CALLS]list_files"
      "[ARGS]{}");
  ASSERT_EQ(got.tool_calls.size(), 2u);
  EXPECT_EQ(got.tool_calls[0].id, "a1b2c3d4e");
  EXPECT_EQ(got.tool_calls[0].arguments_json, R"({"city":"Lyon"})");
  EXPECT_EQ(got.tool_calls[1].name, "list_files");
  EXPECT_EQ(got.tool_calls[1].id, "call_0");
  got = ParseWhole(OptionsFor(ToolCallFormat::kMistral),
                   "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Nice\"}, "
                   "\"id\": \"xyz123456\"}]");
  ASSERT_EQ(got.tool_calls.size(), 1u);
  EXPECT_EQ(got.tool_calls[0].id, "xyz123456");
  EXPECT_EQ(got.text, "");
  const std::string bad = "[TOOL_CALLS]get_weather[ARGS]{\"city\": ";
  EXPECT_EQ(ParseWhole(OptionsFor(ToolCallFormat::kMistral), bad).text, bad);
}

}  // namespace
}  // namespace kvmesh::router

#include "common/grammar/grammar_matcher.h"
#include "router/chat/tool_call_grammar.h"

namespace kvmesh::router {
namespace {

// A forced call's grammar matches the model's own format, and what it
// matches the parser reads back as that call.
TEST(ToolCallGrammarTest, EachFormatRoundTripsThroughTheParser) {
  const auto tools = WeatherTools();
  struct Case {
    ToolCallFormat format;
    std::string text;
  };
  const Case cases[] = {
      {ToolCallFormat::kHermesJson,
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\",\"days\":2}}\n"
       "</tool_call>"},
      {ToolCallFormat::kNone,  // no format of its own: the hermes form
       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":\"Oslo\",\"days\":2}}\n"
       "</tool_call>"},
      {ToolCallFormat::kLlama3Json,
       "{\"name\": \"get_weather\", \"parameters\": {\"city\":\"Oslo\",\"days\":2}}"},
      {ToolCallFormat::kMistral, "[TOOL_CALLS]get_weather[ARGS]{\"city\":\"Oslo\",\"days\":2}"},
  };
  for (const Case& c : cases) {
    auto gbnf = ToolCallGrammar(c.format, tools, "get_weather");
    ASSERT_TRUE(gbnf.ok()) << gbnf.status().ToString();
    auto g = grammar::Grammar::ParseGbnf(*gbnf);
    ASSERT_TRUE(g.ok());
    EXPECT_TRUE(grammar::GrammarMatcher::Matches(*g, c.text)) << c.text;
    AssistantOutputParser::Options options = OptionsFor(ForcedCallFormat(c.format));
    AssistantDelta got = ParseWhole(options, c.text);
    ASSERT_EQ(got.tool_calls.size(), 1u) << c.text;
    EXPECT_EQ(got.tool_calls[0].arguments_json, R"({"city":"Oslo","days":2})");
  }
  // The other tool is not allowed when one is named; either with required.
  auto only = grammar::Grammar::ParseGbnf(
      *ToolCallGrammar(ToolCallFormat::kLlama3Json, tools, "get_weather"));
  EXPECT_FALSE(
      grammar::GrammarMatcher::Matches(*only, R"({"name": "list_files", "parameters": {}})"));
  auto any = grammar::Grammar::ParseGbnf(*ToolCallGrammar(ToolCallFormat::kLlama3Json, tools, ""));
  EXPECT_TRUE(
      grammar::GrammarMatcher::Matches(*any, R"({"name": "list_files", "parameters": {}})"));
  EXPECT_EQ(ToolCallGrammar(ToolCallFormat::kHermesJson, tools, "rm").status().message(),
            "tool_choice names the tool \"rm\", which is not among the offered tools");
}

// A tool whose function is not an object, or whose name is not a string, is
// not offered: an error naming the tool asked for, never an exception.
TEST(ToolCallGrammarTest, MalformedToolsAreSkipped) {
  const auto tools = nlohmann::ordered_json::parse(
      R"([{"function": 7}, {"function": {"name": ["get_weather"]}}, {"function": {"name": 3}}])");
  EXPECT_EQ(ToolCallGrammar(ToolCallFormat::kHermesJson, tools, "get_weather").status().message(),
            "tool_choice names the tool \"get_weather\", which is not among the offered tools");
}

}  // namespace
}  // namespace kvmesh::router
