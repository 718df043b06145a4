#include "router/chat/chat_template.h"

#include <gtest/gtest.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/gguf/gguf_file.h"

namespace kvmesh::router {
namespace {

using Family = ChatTemplate::Family;

// One conversation for every family. The assistant turn carries surrounding
// spaces so the families that strip content differ visibly from those that
// keep it.
const std::vector<ChatMessage> kConversation = {
    {"system", "You are a terse assistant."},
    {"user", "Hello there!"},
    {"assistant", " Hi. How can I help? "},
    {"user", "What is 2+2?"},
};

// Each expectation below is the family's template rendered by a Jinja engine
// (HF settings: trim_blocks, lstrip_blocks) over kConversation with
// bos_token "<s>" and eos_token "</s>", minus the leading BOS (see
// bos_in_text()).
std::string RenderNamed(std::string_view name, const std::vector<ChatMessage>& messages,
                        bool add_generation_prompt = true) {
  StatusOr<ChatTemplate> tmpl = ChatTemplate::FromName(name);
  EXPECT_TRUE(tmpl.ok()) << tmpl.status().ToString();
  if (!tmpl.ok()) return "";
  StatusOr<std::string> text = tmpl->Render(messages, add_generation_prompt);
  EXPECT_TRUE(text.ok()) << text.status().ToString();
  return text.ok() ? *text : "";
}

TEST(ChatTemplateRenderTest, Chatml) {
  EXPECT_EQ(RenderNamed("chatml", kConversation),
            "<|im_start|>system\nYou are a terse assistant.<|im_end|>\n"
            "<|im_start|>user\nHello there!<|im_end|>\n"
            "<|im_start|>assistant\n Hi. How can I help? <|im_end|>\n"
            "<|im_start|>user\nWhat is 2+2?<|im_end|>\n"
            "<|im_start|>assistant\n");
}

TEST(ChatTemplateRenderTest, ChatmlWithoutGenerationPrompt) {
  EXPECT_EQ(RenderNamed("chatml", {{"user", "Hi"}}, /*add_generation_prompt=*/false),
            "<|im_start|>user\nHi<|im_end|>\n");
}

TEST(ChatTemplateRenderTest, Llama2) {
  EXPECT_EQ(RenderNamed("llama2", kConversation),
            "[INST] <<SYS>>\nYou are a terse assistant.\n<</SYS>>\n\nHello there! [/INST]"
            " Hi. How can I help? </s><s>[INST] What is 2+2? [/INST]");
}

TEST(ChatTemplateRenderTest, Llama2WithoutSystem) {
  EXPECT_EQ(RenderNamed("llama2", {{"user", " Hi "}}), "[INST] Hi [/INST]");
}

TEST(ChatTemplateRenderTest, Llama3) {
  EXPECT_EQ(RenderNamed("llama3", kConversation),
            "<|begin_of_text|>"
            "<|start_header_id|>system<|end_header_id|>\n\nYou are a terse assistant.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello there!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi. How can I help?<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
}

TEST(ChatTemplateRenderTest, Llama31AddsKnowledgeHeader) {
  EXPECT_EQ(RenderNamed("llama3.1", kConversation),
            "<|begin_of_text|>"
            "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
            "2023\nToday Date: 26 Jul 2024\n\nYou are a terse assistant.<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHello there!<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\nHi. How can I help?<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>"
            "<|start_header_id|>assistant<|end_header_id|>\n\n");
  EXPECT_EQ(RenderNamed("llama3.1", {{"user", "Hi"}}, false),
            "<|begin_of_text|>"
            "<|start_header_id|>system<|end_header_id|>\n\nCutting Knowledge Date: December "
            "2023\nToday Date: 26 Jul 2024\n\n<|eot_id|>"
            "<|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>");
}

TEST(ChatTemplateRenderTest, MistralV1PutsSystemInFirstTurn) {
  EXPECT_EQ(RenderNamed("mistral-v1", kConversation),
            " [INST] You are a terse assistant.\n\nHello there! [/INST]  Hi. How can I help? "
            "</s> [INST] What is 2+2? [/INST]");
}

TEST(ChatTemplateRenderTest, MistralV3PutsSystemInLastTurn) {
  EXPECT_EQ(RenderNamed("mistral-v3", kConversation),
            "[INST] Hello there![/INST] Hi. How can I help?</s>"
            "[INST] You are a terse assistant.\n\nWhat is 2+2?[/INST]");
  // Ending on an assistant turn, the v3 templates drop the system text.
  std::vector<ChatMessage> ends_with_answer(kConversation.begin(), kConversation.begin() + 3);
  EXPECT_EQ(RenderNamed("mistral-v3", ends_with_answer),
            "[INST] Hello there![/INST] Hi. How can I help?</s>");
}

TEST(ChatTemplateRenderTest, MistralV3Tekken) {
  EXPECT_EQ(RenderNamed("mistral-v3-tekken", kConversation),
            "[INST]Hello there![/INST] Hi. How can I help? </s>"
            "[INST]You are a terse assistant.\n\nWhat is 2+2?[/INST]");
}

TEST(ChatTemplateRenderTest, MistralV7) {
  EXPECT_EQ(RenderNamed("mistral-v7", kConversation),
            "[SYSTEM_PROMPT] You are a terse assistant.[/SYSTEM_PROMPT][INST] Hello "
            "there![/INST]  Hi. How can I help? </s>[INST] What is 2+2?[/INST]");
}

TEST(ChatTemplateRenderTest, MistralV7Tekken) {
  EXPECT_EQ(RenderNamed("mistral-v7-tekken", kConversation),
            "[SYSTEM_PROMPT]You are a terse assistant.[/SYSTEM_PROMPT][INST]Hello "
            "there![/INST] Hi. How can I help? </s>[INST]What is 2+2?[/INST]");
}

TEST(ChatTemplateRenderTest, Zephyr) {
  EXPECT_EQ(RenderNamed("zephyr", kConversation),
            "<|system|>\nYou are a terse assistant.</s>\n"
            "<|user|>\nHello there!</s>\n"
            "<|assistant|>\n Hi. How can I help? </s>\n"
            "<|user|>\nWhat is 2+2?</s>\n"
            "<|assistant|>\n");
}

TEST(ChatTemplateRenderTest, ZephyrUsesTheModelsEos) {
  StatusOr<ChatTemplate> tmpl = ChatTemplate::FromName("zephyr", "<|endoftext|>");
  ASSERT_TRUE(tmpl.ok());
  StatusOr<std::string> text = tmpl->Render({{{"user", "Hi"}}}, true);
  ASSERT_TRUE(text.ok());
  EXPECT_EQ(*text, "<|user|>\nHi<|endoftext|>\n<|assistant|>\n");
}

TEST(ChatTemplateRenderTest, Phi3) {
  EXPECT_EQ(RenderNamed("phi3", kConversation),
            "<|system|>\nYou are a terse assistant.<|end|>\n"
            "<|user|>\nHello there!<|end|>\n"
            "<|assistant|>\n Hi. How can I help? <|end|>\n"
            "<|user|>\nWhat is 2+2?<|end|>\n"
            "<|assistant|>\n");
  // Phi-3.5's template skips an empty system message.
  EXPECT_EQ(RenderNamed("phi3", {{"system", ""}, {"user", "Hi"}}),
            "<|user|>\nHi<|end|>\n<|assistant|>\n");
}

TEST(ChatTemplateRenderTest, RejectsEmptyConversation) {
  StatusOr<ChatTemplate> tmpl = ChatTemplate::FromName("chatml");
  ASSERT_TRUE(tmpl.ok());
  StatusOr<std::string> text = tmpl->Render({}, true);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(), "the conversation has no messages");
}

TEST(ChatTemplateRenderTest, RejectsUnknownRole) {
  StatusOr<ChatTemplate> tmpl = ChatTemplate::FromName("llama3");
  ASSERT_TRUE(tmpl.ok());
  StatusOr<std::string> text = tmpl->Render({{{"user", "Hi"}, {"tool", "42"}}}, true);
  ASSERT_FALSE(text.ok());
  EXPECT_EQ(text.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(text.status().message(),
            "message 1 has role \"tool\"; chat templates take system, user and assistant");
}

TEST(ChatTemplateRenderTest, AlternatingFamiliesRejectOtherOrders) {
  for (std::string_view name : {"llama2", "mistral-v1", "mistral-v3", "mistral-v3-tekken"}) {
    StatusOr<ChatTemplate> tmpl = ChatTemplate::FromName(name);
    ASSERT_TRUE(tmpl.ok());
    StatusOr<std::string> text = tmpl->Render({{{"user", "a"}, {"user", "b"}}}, true);
    ASSERT_FALSE(text.ok()) << name;
    EXPECT_EQ(text.status().message(),
              "the " + std::string(name) +
                  " chat template needs one optional system message first, then user and "
                  "assistant messages alternating from user; message 1 is \"user\" where "
                  "\"assistant\" belongs");
  }
  // mistral-v7 takes system messages anywhere.
  EXPECT_EQ(RenderNamed("mistral-v7", {{"user", "a"}, {"system", "b"}}),
            "[INST] a[/INST][SYSTEM_PROMPT] b[/SYSTEM_PROMPT]");
}

TEST(ChatTemplateNameTest, FromNameAndAliases) {
  for (std::string_view name : ChatTemplate::SupportedNames()) {
    StatusOr<ChatTemplate> tmpl = ChatTemplate::FromName(name);
    ASSERT_TRUE(tmpl.ok()) << name;
  }
  EXPECT_EQ(ChatTemplate::FromName("qwen")->name(), "chatml");
  EXPECT_EQ(ChatTemplate::FromName("mistral")->name(), "mistral-v3");
  EXPECT_EQ(ChatTemplate::FromName("mistral-v7-tekken")->name(), "mistral-v7-tekken");
  EXPECT_TRUE(ChatTemplate::FromName("llama3")->bos_in_text());
  EXPECT_TRUE(ChatTemplate::FromName("llama3.1")->bos_in_text());
  EXPECT_FALSE(ChatTemplate::FromName("llama2")->bos_in_text());
  EXPECT_FALSE(ChatTemplate::FromName("chatml")->bos_in_text());
}

TEST(ChatTemplateNameTest, UnknownNameListsChoices) {
  StatusOr<ChatTemplate> tmpl = ChatTemplate::FromName("vicuna");
  ASSERT_FALSE(tmpl.ok());
  EXPECT_EQ(tmpl.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(tmpl.status().message(),
            "unknown chat template name \"vicuna\"; choose one of: chatml, llama2, llama3, "
            "llama3.1, mistral-v1, mistral-v3, mistral-v3-tekken, mistral-v7, "
            "mistral-v7-tekken, zephyr, phi3, qwen, mistral");
}

}  // namespace
}  // namespace kvmesh::router

namespace kvmesh::router {
namespace {

std::string ReadShared(const std::string& rel) {
  std::ifstream in(std::string(KVMESH_SHARED_DIR) + "/chat-templates/" + rel, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A model's own template runs as written: the prompt is the Python Jinja2
// reference's rendering of the same conversation.
TEST(ChatTemplateJinjaTest, TheModelsOwnTemplateRendersAsTheReference) {
  const auto cases = nlohmann::json::parse(ReadShared("cases.json"));
  for (const std::string name : {"Qwen-Qwen3-0.6B", "meta-llama-Llama-3.2-3B-Instruct",
                                 "mistralai-Ministral-3-14B-Reasoning-2512"}) {
    const std::string source = ReadShared("templates/" + name + ".jinja");
    const auto golden = nlohmann::json::parse(ReadShared("golden/" + name + ".json"));
    auto t = ChatTemplate::FromGguf(source, "<BOS>", "<EOS>");
    ASSERT_TRUE(t.ok()) << name << ": " << t.status().ToString();
    EXPECT_EQ(t->name(), "jinja");
    EXPECT_EQ(t->bos_in_text(), source.find("bos_token") != std::string::npos);
    for (const auto& c : cases) {
      if (c.contains("tools") || c.contains("extra") || c["id"] == "content_parts") continue;
      std::vector<ChatMessage> messages;
      bool plain = true;
      for (const auto& m : c["messages"]) {
        if (!m["content"].is_string() || m.contains("tool_calls")) plain = false;
        if (plain) messages.push_back({m["role"], m["content"]});
      }
      if (!plain) continue;
      const auto& want = golden[c["id"].get<std::string>()];
      auto got = t->Render(messages, c.value("add_generation_prompt", false));
      if (want.contains("error")) {
        EXPECT_FALSE(got.ok()) << name << " / " << c["id"];
        continue;
      }
      // Templates that print today's date differ from the reference's fixed
      // clock in that line only; compare the others whole.
      if (source.find("strftime_now") != std::string::npos) continue;
      ASSERT_TRUE(got.ok()) << name << " / " << c["id"] << ": " << got.status().ToString();
      EXPECT_EQ(*got, want["output"].get<std::string>()) << name << " / " << c["id"];
    }
  }
}

std::string c_tools() { return R"([{"type":"function","function":{"name":"f"}}])"; }

// Tools go to the template's `tools` variable as the reference passes them.
TEST(ChatTemplateJinjaTest, ToolsRenderThroughTheTemplate) {
  const auto cases = nlohmann::ordered_json::parse(ReadShared("cases.json"));
  const std::string source = ReadShared("templates/Qwen-Qwen3-0.6B.jinja");
  const auto golden = nlohmann::json::parse(ReadShared("golden/Qwen-Qwen3-0.6B.json"));
  auto t = ChatTemplate::FromGguf(source, "<BOS>", "<EOS>");
  ASSERT_TRUE(t.ok());
  for (const auto& c : cases) {
    if (c["id"] != "tools_offered") continue;
    std::vector<ChatMessage> messages;
    for (const auto& m : c["messages"]) messages.push_back({m["role"], m["content"]});
    auto got = t->Render(messages, c.value("add_generation_prompt", false), c["tools"].dump());
    ASSERT_TRUE(got.ok()) << got.status().ToString();
    EXPECT_EQ(*got, golden["tools_offered"]["output"].get<std::string>());
  }
  // A family (no template of the model's own) shows no tools.
  auto chatml = ChatTemplate::FromGguf("", "", "");
  const std::vector<ChatMessage> hi = {{"user", "hi"}};
  EXPECT_EQ(*chatml->Render(hi, true, c_tools()), *chatml->Render(hi, true));
}

TEST(ChatTemplateJinjaTest, EmptyOrFamilyNamedTemplatesKeepTheFallback) {
  EXPECT_EQ(ChatTemplate::FromGguf("", "<s>", "</s>")->name(), "chatml");
  EXPECT_EQ(ChatTemplate::FromGguf("llama3", "<s>", "</s>")->name(), "llama3");
  auto raised = ChatTemplate::FromGguf("{{ raise_exception('only user turns') }}", "", "");
  ASSERT_TRUE(raised.ok());
  auto r = raised->Render(std::vector<ChatMessage>{{"user", "hi"}}, true);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("only user turns"), std::string::npos);
}

}  // namespace
}  // namespace kvmesh::router
