#include "router/gateway/responses_api.h"

#include <gtest/gtest.h>

#include "router/gateway/http_errors.h"
#include "router/gateway/response_store.h"
#include "router/gateway/responses_stream.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

std::string Error(const char* body) {
  auto parsed = ParseResponsesRequest(json::parse(body), nullptr);
  EXPECT_FALSE(parsed.ok()) << body;
  return parsed.ok() ? "" : parsed.status().message();
}

// The shape a coding agent sends: developer and user items, function tools
// beside a namespace and a hosted tool, and fields that change nothing here.
constexpr const char* kAgentRequest = R"({
  "model": "m", "stream": true,
  "input": [
    {"type": "message", "id": "m1", "role": "developer",
     "content": [{"type": "input_text", "text": "You are a coding agent."}]},
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "List files"}]},
    {"type": "reasoning", "id": "rs_1", "summary": [], "content": null,
     "encrypted_content": "kvmesh-reasoning:VGhpbmtpbmcu"},
    {"type": "reasoning", "id": "rs_0", "summary": [], "encrypted_content": "gAAAAABforeign"},
    {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "exec_command",
     "arguments": "{\"cmd\":\"ls\"}"},
    {"type": "function_call_output", "id": "fco_1", "call_id": "call_1", "output": "a.txt"}
  ],
  "tools": [
    {"type": "function", "name": "exec_command", "description": "Runs a command.", "strict": false,
     "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}},
                    "required": ["cmd"]}},
    {"type": "namespace", "name": "agents", "tools": [{"type": "function", "name": "spawn"}]},
    {"type": "web_search", "external_web_access": false}
  ],
  "tool_choice": "auto", "parallel_tool_calls": true, "reasoning": {"summary": "auto"},
  "store": false, "include": ["reasoning.encrypted_content"], "prompt_cache_key": "session-1",
  "client_metadata": {"k": "v"}})";

TEST(ResponsesApiTest, AgentRequest) {
  auto parsed = ParseResponsesRequest(json::parse(kAgentRequest), nullptr);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const v1::ChatRequest& r = parsed->request;
  ASSERT_EQ(r.messages_size(), 4);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(0).content(), "You are a coding agent.");
  EXPECT_EQ(r.messages(1).role(), "user");
  EXPECT_EQ(r.messages(2).role(), "assistant");
  EXPECT_EQ(r.messages(2).reasoning_content(), "Thinking.");  // base64 decoded
  ASSERT_EQ(r.messages(2).tool_calls_size(), 1);
  EXPECT_EQ(r.messages(2).tool_calls(0).id(), "call_1");
  EXPECT_EQ(r.messages(2).tool_calls(0).arguments_json(), R"({"cmd":"ls"})");
  EXPECT_EQ(r.messages(3).role(), "tool");
  EXPECT_EQ(r.messages(3).tool_call_id(), "call_1");
  EXPECT_EQ(r.messages(3).name(), "exec_command");
  EXPECT_EQ(r.messages(3).content(), "a.txt");
  // Only the function tool is offered to the model.
  const json tools = json::parse(r.tools_json());
  ASSERT_EQ(tools.size(), 1u);
  EXPECT_EQ(tools[0]["function"]["name"], "exec_command");
  EXPECT_EQ(r.tool_choice(), "");
  EXPECT_EQ(r.options().session_id(), "session-1");
  EXPECT_TRUE(parsed->stream);
  EXPECT_FALSE(parsed->store);
  EXPECT_EQ(parsed->echo["tools"].size(), 3u) << "the response lists the tools as sent";
}

TEST(ResponsesApiTest, TextInputInstructionsAndOptions) {
  auto parsed = ParseResponsesRequest(json::parse(R"({"input": "Hi", "instructions": "Be brief.",
      "max_output_tokens": 20, "temperature": 0, "top_p": 0.5,
      "tool_choice": {"type": "function", "name": "f"},
      "tools": [{"type": "function", "name": "f", "parameters": {"type": "object"}}],
      "text": {"format": {"type": "json_schema", "name": "x",
                          "schema": {"type": "object"}}}})"),
                                      nullptr);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const v1::ChatRequest& r = parsed->request;
  ASSERT_EQ(r.messages_size(), 2);
  EXPECT_EQ(r.messages(0).role(), "system");
  EXPECT_EQ(r.messages(1).content(), "Hi");
  EXPECT_EQ(r.options().max_tokens(), 20);
  EXPECT_EQ(r.options().sampling().temperature(), 0.0f);
  EXPECT_EQ(r.tool_choice(), "f");
  EXPECT_FALSE(r.options().json_schema().empty());
  EXPECT_TRUE(parsed->store) << "the default";
  ASSERT_EQ(parsed->new_messages.size(), 1u) << "instructions are not carried over";
}

TEST(ResponsesApiTest, PreviousConversationComesFirst) {
  std::vector<v1::ChatMessage> previous(2);
  previous[0].set_role("user");
  previous[0].set_content("One");
  previous[1].set_role("assistant");
  previous[1].set_content("Two");
  auto parsed = ParseResponsesRequest(
      json::parse(R"({"input": "Three", "instructions": "Count.", "previous_response_id": "r"})"),
      &previous);
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  ASSERT_EQ(parsed->request.messages_size(), 4);
  EXPECT_EQ(parsed->request.messages(0).content(), "Count.");
  EXPECT_EQ(parsed->request.messages(2).content(), "Two");
  EXPECT_EQ(parsed->request.messages(3).content(), "Three");
  EXPECT_EQ(parsed->previous_response_id, "r");
}

TEST(ResponsesApiTest, ErrorsNameTheField) {
  EXPECT_EQ(Error(R"({"model": "m"})"), "field \"input\" is required");
  EXPECT_EQ(Error(R"({"input": 3})"),
            "field \"input\" must be a string or an array of input items, got number");
  EXPECT_EQ(Error(R"({"input": [{"role": "user", "content": [{"type": "input_image",
                      "image_url": "x"}]}]})"),
            "field \"input[0].content[0].type\" must be input_text or output_text (kvmesh serves "
            "text only), got \"input_image\"");
  EXPECT_EQ(Error(R"({"input": [{"type": "item_reference", "id": "x"}]})"),
            "field \"input[0]\" is an item_reference; kvmesh keeps no items by id (send the "
            "item itself, or use previous_response_id)");
  EXPECT_EQ(Error(R"({"input": [{"type": "function_call", "name": "f"}]})"),
            "field \"input[0].call_id\" is required");
  EXPECT_EQ(Error(R"({"input": "x", "tool_choice": {"name": "f"}})"),
            "field \"tool_choice.type\" is required");
  EXPECT_EQ(Error(R"({"input": "x", "background": true})"),
            "\"background\": true is not supported by kvmesh");
  EXPECT_EQ(Error(R"({"input": "x", "max_output_tokens": 0})"),
            "field \"max_output_tokens\" must be between 1 and 2147483647, got 0");
  EXPECT_EQ(Error(R"({"input": "x", "tool_choice": {"type": "web_search"}})"),
            "field \"tool_choice.type\" must be \"function\" (a local model runs no hosted "
            "tools), got \"web_search\"");
}

TEST(ResponsesApiTest, OutputItemsAndResponse) {
  ChoiceResult result;
  result.reasoning = "Hmm.";
  result.text = "Done.";
  v1::ToolCall call;
  call.set_id("call_9");
  call.set_name("f");
  call.set_arguments_json(R"({"a":1})");
  result.tool_calls.push_back(call);
  const ordered_json items = ResponsesOutputItems("resp_1", result);
  ASSERT_EQ(items.size(), 3u);
  EXPECT_EQ(items[0]["type"], "reasoning");
  EXPECT_EQ(items[0]["encrypted_content"], EncodeReasoning("Hmm."));
  EXPECT_EQ(items[1]["type"], "message");
  EXPECT_EQ(items[1]["content"][0]["text"], "Done.");
  EXPECT_EQ(items[2]["type"], "function_call");
  EXPECT_EQ(items[2]["call_id"], "call_9");
  EXPECT_EQ(items[2]["arguments"], R"({"a":1})");

  auto parsed = ParseResponsesRequest(json::parse(R"({"input": "x"})"), nullptr);
  ASSERT_TRUE(parsed.ok());
  v1::Usage usage;
  usage.set_prompt_tokens(10);
  usage.set_cached_tokens(4);
  usage.set_completion_tokens(3);
  const ordered_json response =
      ResponseJson({"resp_1", 5, "m"}, *parsed, items, v1::FINISH_REASON_LENGTH, &usage);
  EXPECT_EQ(response["object"], "response");
  EXPECT_EQ(response["status"], "incomplete");
  EXPECT_EQ(response["incomplete_details"]["reason"], "max_output_tokens");
  EXPECT_EQ(response["usage"]["input_tokens_details"]["cached_tokens"], 4);
  EXPECT_EQ(response["usage"]["total_tokens"], 13);
}

// The stream's events, in order, by type.
std::vector<std::string> EventTypes(const std::string& sse) {
  std::vector<std::string> types;
  size_t pos = 0;
  while ((pos = sse.find("data: ", pos)) != std::string::npos) {
    const size_t end = sse.find('\n', pos);
    types.push_back(json::parse(sse.substr(pos + 6, end - pos - 6))["type"]);
    pos = end;
  }
  return types;
}

TEST(ResponsesStreamTest, EventSequence) {
  auto parsed = ParseResponsesRequest(json::parse(R"({"input": "x"})"), nullptr);
  ASSERT_TRUE(parsed.ok());
  auto request = std::make_shared<const ResponsesRequest>(*parsed);
  ordered_json stored;
  ResponsesStreamEncoder encoder(
      {"resp_1", 5, "m"}, request,
      [&stored](const ordered_json& response, const GenerationResult&) { stored = response; });
  v1::GenerateTextResponse m1;
  m1.set_reasoning("Let me see.");
  v1::GenerateTextResponse m2;
  m2.set_text("Calling.");
  v1::GenerateTextResponse m3;
  v1::ToolCall* call = m3.add_tool_calls();
  call->set_id("call_1");
  call->set_name("f");
  call->set_arguments_json("{}");
  m3.set_finish_reason(v1::FINISH_REASON_TOOL_CALLS);
  m3.mutable_usage()->set_prompt_tokens(7);
  std::string sse = encoder.Encode(m1);  // one by one: the order matters
  sse += encoder.Encode(m2);
  sse += encoder.Encode(m3);
  sse += encoder.Finish(Status::Ok());
  const std::vector<std::string> want = {"response.created",
                                         "response.in_progress",
                                         "response.output_item.added",
                                         "response.reasoning_text.delta",
                                         "response.reasoning_text.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.content_part.added",
                                         "response.output_text.delta",
                                         "response.output_text.done",
                                         "response.content_part.done",
                                         "response.output_item.done",
                                         "response.output_item.added",
                                         "response.function_call_arguments.delta",
                                         "response.function_call_arguments.done",
                                         "response.output_item.done",
                                         "response.completed"};
  EXPECT_EQ(EventTypes(sse), want);
  EXPECT_NE(sse.find("event: response.completed\n"), std::string::npos);
  ASSERT_EQ(stored["output"].size(), 3u);
  EXPECT_EQ(stored["status"], "completed");
  EXPECT_EQ(stored["output"][2]["name"], "f");
  EXPECT_EQ(stored["usage"]["input_tokens"], 7);
}

TEST(ResponsesStreamTest, ErrorAfterTheStartIsResponseFailed) {
  auto parsed = ParseResponsesRequest(json::parse(R"({"input": "x"})"), nullptr);
  ASSERT_TRUE(parsed.ok());
  ResponsesStreamEncoder encoder({"resp_1", 5, "m"},
                                 std::make_shared<const ResponsesRequest>(*parsed), nullptr);
  v1::GenerateTextResponse m;
  m.set_text("Hel");
  std::string sse = encoder.Encode(m);
  sse += encoder.Finish(UnavailableError("worker w1 failed"));
  const std::vector<std::string> types = EventTypes(sse);
  EXPECT_EQ(types.back(), "response.failed");
  EXPECT_NE(sse.find("worker w1 failed"), std::string::npos);
}

TEST(ResponseStoreTest, BoundedByEntriesBytesAndTime) {
  auto now = ResponseStore::Clock::now();
  ResponseStore store({.max_entries = 2, .max_bytes = 1000, .ttl = std::chrono::seconds(60)},
                      [&now] { return now; });
  store.Put("mine", {{}, "{}", "key-1"});
  EXPECT_TRUE(store.Get("mine", "key-1").has_value());
  EXPECT_FALSE(store.Get("mine", "key-2").has_value()) << "another key's response";
  store.Put("a", {{}, "{}", ""});
  store.Put("b", {{}, "{}", ""});
  store.Put("c", {{}, "{}", ""});
  EXPECT_FALSE(store.Get("mine", "key-1").has_value()) << "the oldest goes first";
  EXPECT_FALSE(store.Get("a").has_value());
  EXPECT_TRUE(store.Get("b").has_value());
  store.Put("big", {{}, std::string(2000, 'x'), ""});
  EXPECT_FALSE(store.Get("big").has_value()) << "never fits";
  now += std::chrono::seconds(61);
  EXPECT_FALSE(store.Get("c").has_value());
  EXPECT_EQ(store.size(), 0u);
  EXPECT_EQ(store.bytes(), 0u);
}

}  // namespace
}  // namespace kvmesh::router::gateway
