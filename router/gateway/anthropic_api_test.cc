#include "router/gateway/anthropic_api.h"

#include <gtest/gtest.h>

#include "router/gateway/http_errors.h"
#include "router/gateway/proto_matchers.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;

std::string ParseError(const char* body) {
  StatusOr<AnthropicMessagesRequest> parsed = ParseAnthropicMessagesRequest(json::parse(body));
  EXPECT_FALSE(parsed.ok()) << body;
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(AnthropicApiTest, MessagesRequest) {
  StatusOr<AnthropicMessagesRequest> parsed = ParseAnthropicMessagesRequest(json::parse(R"({
      "model": "tiny", "max_tokens": 64,
      "system": [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "Be kind."}],
      "messages": [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello"}]},
        {"role": "user", "content": [{"type": "text", "text": "Bye", "cache_control": {}}]}],
      "stop_sequences": ["\n\nHuman:"], "temperature": 0.7, "top_p": 0.95, "top_k": 5,
      "stream": true, "metadata": {"user_id": "u-1"}, "thinking": {"type": "disabled"}})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(ProtoEquals(parsed->request, R"pb(
    model: "tiny"
    messages { role: "system" content: "Be brief.\nBe kind." }
    messages { role: "user" content: "Hi" }
    messages { role: "assistant" content: "Hello" }
    messages { role: "user" content: "Bye" cache_ttl_seconds: 300 }
    options {
      sampling { temperature: 0.7 top_k: 5 top_p: 0.95 }
      max_tokens: 64
      stop: "\n\nHuman:"
    })pb"));
  EXPECT_TRUE(parsed->stream);
}

TEST(AnthropicApiTest, SystemString) {
  StatusOr<AnthropicMessagesRequest> parsed = ParseAnthropicMessagesRequest(json::parse(
      R"({"max_tokens": 1, "system": "S", "messages": [{"role": "user", "content": "U"}]})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(ProtoEquals(parsed->request, R"pb(
    messages { role: "system" content: "S" }
    messages { role: "user" content: "U" }
    options {
      sampling {}
      max_tokens: 1
    })pb"));
  EXPECT_FALSE(parsed->stream);
}

TEST(AnthropicApiTest, ErrorsNameTheField) {
  EXPECT_EQ(ParseError(R"({"messages": [{"role": "user", "content": "x"}]})"),
            "field \"max_tokens\" is required");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8})"), "field \"messages\" is required");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "tool", "content": "x"}]})"),
            "field \"messages[0].role\" must be user, assistant or system, got \"tool\"");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user"}]})"),
            "field \"messages[0].content\" is required");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user",
                           "content": [{"type": "image", "source": {}}]}]})"),
            "field \"messages[0].content[0].type\" must be text or tool_result in a user message "
            "(kvmesh serves text and tools), got \"image\"");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "assistant",
                           "content": [{"type": "tool_use", "name": "f", "input": {}}]}]})"),
            "field \"messages[0].content[0].id\" is required");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "assistant",
                           "content": [{"type": "tool_use", "id": "t", "name": "f", "input": 3}]}]})"),
            "field \"messages[0].content[0].input\" must be an object, got number");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user",
                           "content": [{"type": "tool_result", "content": "x"}]}]})"),
            "field \"messages[0].content[0].tool_use_id\" is required");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                           "temperature": 1.5})"),
            "field \"temperature\" must be between 0 and 1, got 1.5");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                           "stop_sequences": "END"})"),
            "field \"stop_sequences\" must be an array of strings, got string");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                           "tools": [{"name": "f"}]})"),
            "field \"tools[0].input_schema\" is required");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                           "tools": [{"name": "f", "input_schema": {}}],
                           "tool_choice": {"type": "some"}})"),
            "field \"tool_choice.type\" must be auto, any, tool or none, got \"some\"");
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                           "tools": [{"name": "f", "input_schema": {}}],
                           "tool_choice": {"type": "tool"}})"),
            "field \"tool_choice.name\" is required");
  // A tool_choice without a type (the fuzzer's find: the error once read the
  // missing field through nlohmann's const operator[], past the map).
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                           "tools": [{"name": "f", "input_schema": {}}],
                           "tool_choice": {"tYpe": "auto"}})"),
            "field \"tool_choice.type\" is required");
  for (const auto& [choice, expected] :
       std::vector<std::pair<std::string, std::string>>{{R"({"type": "any"})", "required"},
                                                        {R"({"type": "tool", "name": "f"})", "f"},
                                                        {R"({"type": "auto"})", ""}}) {
    auto forced = ParseAnthropicMessagesRequest(json::parse(
        R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
            "tools": [{"name": "f", "input_schema": {}}], "tool_choice": )" +
        choice + "}"));
    ASSERT_TRUE(forced.ok()) << forced.status().ToString();
    EXPECT_EQ(forced->request.tool_choice(), expected) << choice;
  }
  EXPECT_EQ(ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": "x"}],
                           "metadata": "x"})"),
            "field \"metadata\" must be an object, got string");
}

// What Claude Code sends: system blocks, a system-role message inside
// `messages`, tools, and fields that change nothing here.
TEST(AnthropicApiTest, AcceptsWhatClaudeCodeSends) {
  auto parsed = ParseAnthropicMessagesRequest(nlohmann::json::parse(R"({
    "model": "claude-sonnet-4-5", "max_tokens": 128000, "stream": true,
    "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1"},
               {"type": "text", "text": "You are Claude Code.", "cache_control": {"type": "ephemeral"}}],
    "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                 {"role": "system", "content": "reminder"}],
    "tools": [{"name": "Bash", "description": "Run a command",
               "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
    "tool_choice": {"type": "auto"},
    "thinking": {"type": "enabled", "budget_tokens": 1024}, "metadata": {"user_id": "u"},
    "context_management": {"edits": []}, "output_config": {}, "service_tier": "auto"})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const v1::ChatRequest& r = parsed->request;
  ASSERT_EQ(r.messages_size(), 3);
  EXPECT_EQ(r.messages(0).role(), "system");
  // The per-request billing block is kept out of the prompt.
  EXPECT_EQ(r.messages(0).content(), "You are Claude Code.");
  EXPECT_EQ(r.messages(2).role(), "system");
  EXPECT_EQ(r.messages(2).content(), "reminder");
  EXPECT_EQ(nlohmann::json::parse(r.tools_json()),
            nlohmann::json::parse(R"([{"type": "function", "function": {"name": "Bash",
              "description": "Run a command", "parameters": {"type": "object",
              "properties": {"command": {"type": "string"}}}}}])"));
  auto none = ParseAnthropicMessagesRequest(nlohmann::json::parse(R"({"max_tokens": 4,
    "messages": [{"role": "user", "content": "hi"}],
    "tools": [{"name": "f", "input_schema": {}}], "tool_choice": {"type": "none"}})"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->request.tools_json().empty());
}

// A tool round trip as Claude Code sends it back: the assistant's thinking,
// text and tool_use, then the user's tool_result (an error, in blocks) and
// its next words.
TEST(AnthropicApiTest, ToolUseAndToolResultBlocks) {
  auto parsed = ParseAnthropicMessagesRequest(nlohmann::json::parse(R"({
    "max_tokens": 64,
    "messages": [
      {"role": "user", "content": "List files"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Use ls.", "signature": ""},
        {"type": "text", "text": "Listing."},
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "is_error": true,
         "content": [{"type": "text", "text": "ls: denied"}]},
        {"type": "text", "text": "Try again"}]}]})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(ProtoEquals(parsed->request, R"pb(
    messages { role: "user" content: "List files" }
    messages {
      role: "assistant"
      content: "Listing."
      reasoning_content: "Use ls."
      tool_calls { id: "toolu_1" name: "Bash" arguments_json: "{\"command\":\"ls\"}" }
    }
    messages { role: "tool" content: "Error: ls: denied" tool_call_id: "toolu_1" name: "Bash" }
    messages { role: "user" content: "Try again" }
    options {
      sampling {}
      max_tokens: 64
    })pb"));
}

// cache_control breakpoints become retention on the message they end: the
// system (its blocks or the tools), a message's block, a tool result.
TEST(AnthropicApiTest, CacheControlBreakpoints) {
  auto parsed = ParseAnthropicMessagesRequest(nlohmann::json::parse(R"({
    "max_tokens": 8,
    "system": [{"type": "text", "text": "S", "cache_control": {"type": "ephemeral"}}],
    "tools": [{"name": "f", "input_schema": {}, "cache_control": {"type": "ephemeral", "ttl": "1h"}}],
    "messages": [
      {"role": "user", "content": "a"},
      {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r",
                                     "cache_control": {"type": "ephemeral", "ttl": "1h"}}]},
      {"role": "user", "content": [{"type": "text", "text": "b", "cache_control": {"type": "ephemeral"}}]}]})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const v1::ChatRequest& r = parsed->request;
  ASSERT_EQ(r.messages_size(), 5);
  EXPECT_EQ(r.messages(0).cache_ttl_seconds(), 3600u);  // the tools' 1h wins over the system's 5m
  EXPECT_EQ(r.messages(1).cache_ttl_seconds(), 0u);
  EXPECT_EQ(r.messages(3).role(), "tool");
  EXPECT_EQ(r.messages(3).cache_ttl_seconds(), 3600u);
  EXPECT_EQ(r.messages(4).cache_ttl_seconds(), 300u);
  EXPECT_EQ(
      ParseError(R"({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type":
                           "text", "text": "x", "cache_control": {"type": "ephemeral", "ttl": "2d"}}]}]})"),
      "field \"messages[0].content[0].cache_control.ttl\" must be \"5m\" or \"1h\", got \"2d\"");
}

TEST(AnthropicApiTest, MessageJsonWithThinkingAndToolUse) {
  GenerationResult result;
  result.reasoning = "Need ls.";
  v1::ToolCall call;
  call.set_id("call_x");
  call.set_name("Bash");
  call.set_arguments_json(R"({"command":"ls"})");
  result.tool_calls.push_back(call);
  result.finish_reason = v1::FINISH_REASON_TOOL_CALLS;
  EXPECT_EQ(ToJsonText(AnthropicMessageJson(ResponseMeta{"msg_1", 0, "tiny"}, result)),
            R"({"id":"msg_1","type":"message","role":"assistant","model":"tiny",)"
            R"("content":[{"type":"thinking","thinking":"Need ls.","signature":""},)"
            R"({"type":"tool_use","id":"call_x","name":"Bash","input":{"command":"ls"}}],)"
            R"("stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":0,)"
            R"("cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}})");
}

TEST(AnthropicApiTest, MessageJson) {
  GenerationResult result;
  result.text = "Hello!";
  result.finish_reason = v1::FINISH_REASON_STOP;
  result.usage.set_prompt_tokens(20);
  result.usage.set_cached_tokens(16);
  result.usage.set_completion_tokens(3);
  EXPECT_EQ(ToJsonText(AnthropicMessageJson(ResponseMeta{"msg_1", 0, "tiny"}, result)),
            R"({"id":"msg_1","type":"message","role":"assistant","model":"tiny",)"
            R"("content":[{"type":"text","text":"Hello!"}],"stop_reason":"end_turn",)"
            R"("stop_sequence":null,"usage":{"input_tokens":4,"cache_creation_input_tokens":0,)"
            R"("cache_read_input_tokens":16,"output_tokens":3}})");
}

TEST(AnthropicApiTest, MessageJsonNamesTheMatchedStopSequence) {
  GenerationResult result;
  v1::GenerateTextResponse last;
  last.set_text("Hi");
  last.set_finish_reason(v1::FINISH_REASON_STOP);
  last.set_stop_sequence("\n\nHuman:");
  last.mutable_usage()->set_prompt_tokens(5);
  last.mutable_usage()->set_completion_tokens(2);
  result.Add(last);
  EXPECT_EQ(ToJsonText(AnthropicMessageJson(ResponseMeta{"msg_2", 0, "tiny"}, result)),
            R"({"id":"msg_2","type":"message","role":"assistant","model":"tiny",)"
            R"("content":[{"type":"text","text":"Hi"}],"stop_reason":"stop_sequence",)"
            R"("stop_sequence":"\n\nHuman:","usage":{"input_tokens":5,)"
            R"("cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":2}})");
}

TEST(AnthropicApiTest, StopReasons) {
  EXPECT_EQ(AnthropicStopReason(v1::FINISH_REASON_STOP), "end_turn");
  EXPECT_EQ(AnthropicStopReason(v1::FINISH_REASON_STOP, "END"), "stop_sequence");
  EXPECT_EQ(AnthropicStopReason(v1::FINISH_REASON_LENGTH, "END"), "max_tokens");
  EXPECT_EQ(AnthropicStopReason(v1::FINISH_REASON_LENGTH), "max_tokens");
  EXPECT_EQ(AnthropicStopReason(v1::FINISH_REASON_CONTEXT), "max_tokens");
  EXPECT_EQ(AnthropicStopReason(v1::FINISH_REASON_UNSPECIFIED), "end_turn");
}

}  // namespace
// Volatile prefixes: dropped from block and string systems; an empty list
// keeps everything.
TEST(AnthropicApiTest, VolatileSystemTextIsDroppedUnlessDisabled) {
  const auto blocks = nlohmann::json::parse(R"({"max_tokens": 4,
    "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.3;"},
               {"type": "text", "text": "Stable."}],
    "messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(ParseAnthropicMessagesRequest(blocks)->request.messages(0).content(), "Stable.");
  const auto text = nlohmann::json::parse(R"({"max_tokens": 4,
    "system": "x-anthropic-billing-header: cc_version=9;\nStable.",
    "messages": [{"role": "user", "content": "hi"}]})");
  EXPECT_EQ(ParseAnthropicMessagesRequest(text)->request.messages(0).content(), "Stable.");
  AnthropicParseOptions keep;
  keep.volatile_prefixes.clear();
  EXPECT_EQ(ParseAnthropicMessagesRequest(blocks, keep)->request.messages(0).content(),
            "x-anthropic-billing-header: cc_version=2.1.3;\nStable.");
}

// A system block whose type is not a string is an error naming the block,
// not an exception (found by gateway_fuzz).
TEST(AnthropicApiTest, SystemBlockWithNonStringTypeIsAnError) {
  const auto body = nlohmann::json::parse(R"({"max_tokens": 4,
    "system": [{"type": ["text"], "text": "x"}],
    "messages": [{"role": "user", "content": "hi"}]})");
  const auto parsed = ParseAnthropicMessagesRequest(body);
  ASSERT_FALSE(parsed.ok());
  EXPECT_NE(parsed.status().message().find("system"), std::string::npos)
      << parsed.status().message();
}

}  // namespace kvmesh::router::gateway

namespace kvmesh::router::gateway {
namespace {

TEST(AnthropicApiTest, UsageSplitsThePromptIntoReadWrittenAndTheRest) {
  v1::Usage usage;
  usage.set_prompt_tokens(100);
  usage.set_cached_tokens(30);
  usage.set_cache_write_tokens(50);  // computed up to the breakpoint
  usage.set_completion_tokens(7);
  EXPECT_EQ(ToJsonText(AnthropicUsageJson(usage)),
            R"({"input_tokens":20,"cache_creation_input_tokens":50,)"
            R"("cache_read_input_tokens":30,"output_tokens":7})");
  usage.set_cache_write_tokens(500);  // never more than the uncached rest
  EXPECT_EQ(AnthropicUsageJson(usage)["cache_creation_input_tokens"], 70);
  EXPECT_EQ(AnthropicUsageJson(usage)["input_tokens"], 0);
}

}  // namespace
}  // namespace kvmesh::router::gateway
