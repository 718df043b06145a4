#include "router/chat_relay.h"

#include <gtest/gtest.h>

#include "common/tokenizer/test_util.h"

namespace kvmesh::router {
namespace {

constexpr char kWeatherTools[] =
    R"([{"type":"function","function":{"name":"get_weather","description":"Weather now",)"
    R"("parameters":{"type":"object","properties":{"city":{"type":"string"}}}}}])";

ChatTemplate Qwen3Template() {
  const std::string source = testing_util::ReadFileOrFail(
      testing_util::SharedDir() + "/chat-templates/templates/Qwen-Qwen3-0.6B.jinja");
  auto t = ChatTemplate::FromGguf(source, "", "<|im_end|>");
  EXPECT_TRUE(t.ok()) << t.status().ToString();
  return std::move(t).value();
}

v1::GenerateTextResponse Text(std::string text) {
  v1::GenerateTextResponse m;
  m.set_text(std::move(text));
  return m;
}

// The model's own template shows the offered tools, an earlier call and its
// result the way the model was tuned on them.
TEST(ChatRelayTest, Qwen3RendersToolsCallsAndResults) {
  const ChatTemplate t = Qwen3Template();
  EXPECT_EQ(t.output_syntax().tool_calls, ToolCallFormat::kHermesJson);
  std::vector<ChatMessage> messages = {
      {"user", "Weather in Paris?"}, {"assistant", ""}, {"tool", "18C"}};
  messages[1].tool_calls.push_back({"call_1", "get_weather", R"({"city":"Paris"})"});
  messages[2].tool_call_id = "call_1";
  auto text = t.Render(messages, true, kWeatherTools);
  ASSERT_TRUE(text.ok()) << text.status().ToString();
  EXPECT_NE(
      text->find("<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\""),
      std::string::npos)
      << *text;
  EXPECT_NE(text->find("<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Paris\"}}\n</tool_call>"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("<|im_start|>user\n<tool_response>\n18C\n</tool_response><|im_end|>"),
            std::string::npos)
      << *text;
  messages[1].tool_calls[0].arguments_json = "[1, 2]";
  auto bad = t.Render(messages, true, kWeatherTools);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "message 1: tool call call_1 (get_weather): arguments must be a JSON object");
}

TEST(ChatRelayTest, MarkersAreSingleTokensOfTheQwen2Vocabulary) {
  const Tokenizer* qwen2 = testing_util::SharedTokenizerOrFail(testing_util::VocabPath("qwen2"));
  ASSERT_NE(qwen2, nullptr);
  OutputSyntax syntax{ToolCallFormat::kHermesJson, /*reasoning=*/false};
  const std::vector<int32_t> ids = ChatRelay::MarkerTokens(*qwen2, syntax);
  ASSERT_EQ(ids.size(), 2u);
  EXPECT_EQ(qwen2->TokenToPiece(ids[0], true), "<tool_call>");
  EXPECT_EQ(qwen2->TokenToPiece(ids[1], true), "</tool_call>");
}

// The worker's stream, split where a stream may split it, comes out as
// reasoning, then one whole call, and the turn ends with TOOL_CALLS.
TEST(ChatRelayTest, SplitsAStreamIntoReasoningAndACall) {
  const ChatTemplate t = Qwen3Template();
  ChatRelay relay(t, "<|im_start|>assistant\n", kWeatherTools);
  std::vector<v1::GenerateTextResponse> out;
  for (const char* piece :
       {"<think>\nParis", " weather.\n</think>\n\n<tool", "_call>\n{\"name\": ",
        "\"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"}) {
    out.push_back(relay.Relay(Text(piece)));
  }
  v1::GenerateTextResponse last = Text("");
  last.set_finish_reason(v1::FINISH_REASON_STOP);
  out.push_back(relay.Relay(last));
  std::string reasoning, text;
  int calls = 0;
  for (const auto& m : out) {
    reasoning += m.reasoning();
    text += m.text();
    calls += m.tool_calls_size();
  }
  EXPECT_EQ(reasoning, "Paris weather.");
  EXPECT_EQ(text, "");
  ASSERT_EQ(calls, 1);
  ASSERT_EQ(out[3].tool_calls_size(), 1);  // whole, the moment </tool_call> arrived
  EXPECT_EQ(out[3].tool_calls(0).name(), "get_weather");
  EXPECT_EQ(out[3].tool_calls(0).arguments_json(), R"({"city":"Paris"})");
  EXPECT_EQ(out[3].tool_calls(0).id().rfind("call_", 0), 0u);
  EXPECT_EQ(out[3].tool_calls(0).id().size(), 29u);
  EXPECT_EQ(out.back().finish_reason(), v1::FINISH_REASON_TOOL_CALLS);
}

TEST(ChatRelayTest, TextOnlyAnswersKeepTheirFinishReason) {
  const ChatTemplate t = Qwen3Template();
  ChatRelay relay(t, "<|im_start|>assistant\n", kWeatherTools);
  v1::GenerateTextResponse last = Text("It is sunny.");
  last.set_finish_reason(v1::FINISH_REASON_STOP);
  v1::GenerateTextResponse out = relay.Relay(last);
  EXPECT_EQ(out.text(), "It is sunny.");
  EXPECT_EQ(out.finish_reason(), v1::FINISH_REASON_STOP);
}

}  // namespace
}  // namespace kvmesh::router
