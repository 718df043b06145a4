#include "router/gateway/openai_api.h"

#include <gtest/gtest.h>

#include <optional>

#include "router/gateway/http_errors.h"
#include "router/gateway/proto_matchers.h"

namespace kvmesh::router::gateway {
namespace {

using nlohmann::json;

std::string CompletionError(const char* body) {
  StatusOr<OpenAiCompletionRequest> parsed = ParseOpenAiCompletionRequest(json::parse(body));
  EXPECT_FALSE(parsed.ok()) << body;
  return parsed.ok() ? "" : parsed.status().message();
}

std::string ChatError(const char* body) {
  StatusOr<OpenAiChatRequest> parsed = ParseOpenAiChatRequest(json::parse(body));
  EXPECT_FALSE(parsed.ok()) << body;
  return parsed.ok() ? "" : parsed.status().message();
}

TEST(OpenAiApiTest, CompletionRequestWithEveryField) {
  StatusOr<OpenAiCompletionRequest> parsed = ParseOpenAiCompletionRequest(json::parse(R"({
      "model": "tiny", "prompt": "Once upon", "max_tokens": 32, "temperature": 0.5,
      "top_p": 0.9, "top_k": 40, "min_p": 0.05, "seed": 1234, "stop": "\n",
      "presence_penalty": 0.25, "frequency_penalty": -0.5, "repetition_penalty": 1.1,
      "stream": true, "stream_options": {"include_usage": true}, "n": 1, "user": "u-1",
      "cache_salt": "tenant-a", "ignore_eos": true, "logprobs": null, "echo": false})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(ProtoEquals(parsed->request, R"pb(
    model: "tiny"
    prompt: "Once upon"
    options {
      sampling {
        temperature: 0.5
        top_k: 40
        top_p: 0.9
        min_p: 0.05
        repetition_penalty: 1.1
        presence_penalty: 0.25
        frequency_penalty: -0.5
        seed: 1234
      }
      max_tokens: 32
      stop: "\n"
      ignore_eos: true
      cache_salt: "tenant-a"
      n: 1
    })pb"));
  EXPECT_TRUE(parsed->stream.stream);
  EXPECT_TRUE(parsed->stream.include_usage);
}

TEST(OpenAiApiTest, CompletionPromptForms) {
  StatusOr<OpenAiCompletionRequest> parsed =
      ParseOpenAiCompletionRequest(json::parse(R"({"prompt": [1, 15043, 29892]})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(ProtoEquals(
      parsed->request,
      "prompt_tokens: 1 prompt_tokens: 15043 prompt_tokens: 29892 options { sampling {} }"));
  parsed = ParseOpenAiCompletionRequest(json::parse(R"({"prompt": ["hello"]})"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->request.prompt(), "hello");
  parsed = ParseOpenAiCompletionRequest(json::parse(R"({"prompt": [[5, 6]]})"));
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed->request.prompt_tokens_size(), 2);
  EXPECT_FALSE(parsed->stream.stream);
}

TEST(OpenAiApiTest, CompletionRequestErrorsNameTheField) {
  EXPECT_EQ(CompletionError(R"({"model": "tiny"})"), "field \"prompt\" is required");
  EXPECT_EQ(CompletionError(R"({"prompt": {"text": "hi"}})"),
            "field \"prompt\" must be a string, an array of token ids, or an array holding one "
            "of those, got object");
  EXPECT_EQ(CompletionError(R"({"prompt": ["a", "b"]})"),
            "field \"prompt\" holds several prompts; kvmesh takes one prompt per request");
  EXPECT_EQ(CompletionError(R"({"prompt": [1, -2]})"),
            "field \"prompt\" must hold token ids between 0 and 2147483647, got -2");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "max_tokens": "16"})"),
            "field \"max_tokens\" must be an integer, got string");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "max_tokens": -1})"),
            "field \"max_tokens\" must be between 0 and 2147483647, got -1");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "temperature": 3})"),
            "field \"temperature\" must be between 0 and 2, got 3");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stop": ["a", 1]})"),
            "field \"stop\" must be a string or an array of strings, got array");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stop": ""})"),
            "field \"stop\" must not contain empty strings, got \"\"");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "n": 17})"),
            "field \"n\" must be between 1 and 16, got 17");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logprobs": 21})"),
            "field \"logprobs\" must be between 0 and 20, got 21");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logprobs": true})"),
            "field \"logprobs\" must be an integer (the alternatives per token, 0 to 20) on "
            "/v1/completions, got boolean");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "n": 3, "best_of": 2})"),
            "field \"best_of\" must be at least n (3), got 2");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "best_of": 2, "stream": true})"),
            "best_of above n cannot be streamed (the best are known at the end)");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "suffix": "y"})"),
            "\"suffix\" is not supported by kvmesh");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "stream_options": true})"),
            "field \"stream_options\" must be an object, got boolean");
}

TEST(OpenAiApiTest, ChatRequest) {
  StatusOr<OpenAiChatRequest> parsed = ParseOpenAiChatRequest(json::parse(R"({
      "model": "tiny",
      "messages": [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"},
                                     {"type": "text", "text": "there"}]},
        {"role": "assistant", "content": null},
        {"role": "user", "content": "Again", "name": "bob"}],
      "max_tokens": 8, "max_completion_tokens": 12, "top_k": -1,
      "stop": ["END", "STOP"], "response_format": {"type": "text"}})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(ProtoEquals(parsed->request, R"pb(
    model: "tiny"
    messages { role: "system" content: "Be brief." }
    messages { role: "user" content: "Hi\nthere" }
    messages { role: "assistant" content: "" }
    messages { role: "user" content: "Again" }
    options {
      sampling { top_k: 0 }
      max_tokens: 12
      stop: "END"
      stop: "STOP"
    })pb"));
}

TEST(OpenAiApiTest, ChatRequestWithToolsAndToolMessages) {
  StatusOr<OpenAiChatRequest> parsed = ParseOpenAiChatRequest(json::parse(R"({
      "messages": [
        {"role": "user", "content": "Weather in Paris?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1",
         "type": "function", "function": {"name": "get_weather",
         "arguments": "{\"city\": \"Paris\"}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "18C"}],
      "tools": [{"type": "function", "function": {"name": "get_weather",
                 "description": "Weather", "parameters": {"type": "object"}}}],
      "tool_choice": "auto", "parallel_tool_calls": false})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_TRUE(ProtoEquals(parsed->request, R"pb(
    messages { role: "user" content: "Weather in Paris?" }
    messages {
      role: "assistant"
      tool_calls { id: "call_1" name: "get_weather" arguments_json: "{\"city\": \"Paris\"}" }
    }
    messages { role: "tool" content: "18C" tool_call_id: "call_1" name: "get_weather" }
    tools_json: "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"description\":\"Weather\",\"parameters\":{\"type\":\"object\"}}}]"
    tool_choice: "auto"
    options { sampling {} })pb"));
  auto none = ParseOpenAiChatRequest(json::parse(R"({"messages": [{"role": "user",
      "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}],
      "tool_choice": "none"})"));
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->request.tools_json().empty());
}

TEST(OpenAiApiTest, ChatCompletionJsonWithToolCalls) {
  GenerationResult result;
  result.reasoning = "Look it up.";
  v1::ToolCall call;
  call.set_id("call_9");
  call.set_name("get_weather");
  call.set_arguments_json(R"({"city":"Paris"})");
  result.tool_calls.push_back(call);
  result.finish_reason = v1::FINISH_REASON_TOOL_CALLS;
  const nlohmann::ordered_json out = OpenAiChatCompletionJson(ResponseMeta{"c", 0, "m"}, result);
  EXPECT_EQ(ToJsonText(out["choices"][0]),
            R"({"index":0,"message":{"role":"assistant","content":null,)"
            R"("reasoning_content":"Look it up.","tool_calls":[{"id":"call_9","type":"function",)"
            R"("function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},)"
            R"("logprobs":null,"finish_reason":"tool_calls"})");
}

TEST(OpenAiApiTest, LogitBias) {
  auto parsed = ParseOpenAiCompletionRequest(
      json::parse(R"({"prompt": "x", "logit_bias": {"50256": -100, "7": 2.5}})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const auto& bias = parsed->request.options().sampling().logit_bias();
  ASSERT_EQ(bias.size(), 2u);
  EXPECT_EQ(bias.at(50256), -100.0f);
  EXPECT_EQ(bias.at(7), 2.5f);
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logit_bias": {"abc": 1}})"),
            "field \"logit_bias\" has key \"abc\", which is not a token id (a non-negative "
            "integer)");
  EXPECT_EQ(CompletionError(R"({"prompt": "x", "logit_bias": {"5": 101}})"),
            "field \"logit_bias.5\" must be a number in [-100, 100], got 101");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}], "logit_bias": [1]})"),
            "field \"logit_bias\" must be an object of token id → bias, got array");
}

TEST(OpenAiApiTest, ChatRequestErrorsNameTheField) {
  EXPECT_EQ(ChatError(R"({"model": "tiny"})"), "field \"messages\" is required");
  EXPECT_EQ(ChatError(R"({"messages": []})"), "field \"messages\" must not be empty, got array");
  EXPECT_EQ(ChatError(R"({"messages": ["hi"]})"),
            "field \"messages[0]\" must be an object, got string");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "tool", "content": "42"}]})"),
            "field \"messages[0].tool_call_id\" is required");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "function", "content": "42"}]})"),
            "field \"messages[0].role\" must be system, developer, user, assistant or tool, got "
            "\"function\"");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "assistant", "tool_calls": [{"id": "c",
                          "type": "function", "function": {"name": "f", "arguments": "[1]"}}]}]})"),
            "field \"messages[0].tool_calls[0].function.arguments\" must be a string holding a "
            "JSON object, got \"[1]\"");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "tools": [{"type": "function", "function": {"name": "f"}}],
                          "tool_choice": "always"})"),
            "field \"tool_choice\" must be \"none\", \"auto\" or \"required\", got \"always\"");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "response_format": {"type": "json_schema", "json_schema": {"name": "x",
                          "schema": {"type": "object", "patternProperties": {}}}}})"),
            "response_format.json_schema.schema: JSON schema at #: keyword \"patternProperties\" "
            "is not supported");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "response_format": {"type": "xml"}})"),
            "field \"response_format.type\" must be text, json_object or json_schema, got \"xml\"");
  EXPECT_EQ(
      ChatError(R"({"messages": [{"role": "user", "content": "x"}], "grammar": "root ::= x"})"),
      "field \"grammar\": grammar: rule \"x\" is used but not defined");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": 5}]})"),
            "field \"messages[0].content\" must be a string or an array of content parts, got "
            "number");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": [{"type": "image_url"}]}]})"),
            "field \"messages[0].content[0].type\" must be \"text\" (kvmesh serves text only), "
            "got \"image_url\"");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "tools": [{"type": "function"}]})"),
            "field \"tools[0].function\" is required");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "tools": [{"type": "web_search"}]})"),
            "field \"tools[0].type\" must be \"function\", got \"web_search\"");
  auto json_object = ParseOpenAiChatRequest(json::parse(R"({"messages": [{"role": "user",
      "content": "x"}], "response_format": {"type": "json_object"}})"));
  ASSERT_TRUE(json_object.ok());
  EXPECT_NE(json_object->request.options().grammar().find("root ::= json-object"),
            std::string::npos);
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "repetition_penalty": 0})"),
            "field \"repetition_penalty\" must be above 0, got 0");
}

GenerationResult SampleResult() {
  GenerationResult result;
  result.text = "Hello, world!";
  result.finish_reason = v1::FINISH_REASON_STOP;
  result.usage.set_prompt_tokens(12);
  result.usage.set_cached_tokens(8);
  result.usage.set_completion_tokens(4);
  result.worker = "worker-a";
  return result;
}

TEST(OpenAiApiTest, ChatCompletionJson) {
  ResponseMeta meta{"chatcmpl-abc", 1700000000, "tiny"};
  EXPECT_EQ(ToJsonText(OpenAiChatCompletionJson(meta, SampleResult())),
            R"({"id":"chatcmpl-abc","object":"chat.completion","created":1700000000,)"
            R"("model":"tiny","choices":[{"index":0,"message":{"role":"assistant",)"
            R"("content":"Hello, world!"},"logprobs":null,"finish_reason":"stop"}],)"
            R"("usage":{"prompt_tokens":12,"completion_tokens":4,"total_tokens":16,)"
            R"("prompt_tokens_details":{"cached_tokens":8}}})");
}

TEST(OpenAiApiTest, CompletionJson) {
  ResponseMeta meta{"cmpl-abc", 1700000000, "tiny"};
  GenerationResult result = SampleResult();
  result.finish_reason = v1::FINISH_REASON_LENGTH;
  EXPECT_EQ(ToJsonText(OpenAiCompletionJson(meta, result)),
            R"({"id":"cmpl-abc","object":"text_completion","created":1700000000,)"
            R"("model":"tiny","choices":[{"text":"Hello, world!","index":0,"logprobs":null,)"
            R"("finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":4,)"
            R"("total_tokens":16,"prompt_tokens_details":{"cached_tokens":8}}})");
}

TEST(OpenAiApiTest, FinishReasons) {
  EXPECT_EQ(OpenAiFinishReason(v1::FINISH_REASON_STOP), "stop");
  EXPECT_EQ(OpenAiFinishReason(v1::FINISH_REASON_LENGTH), "length");
  EXPECT_EQ(OpenAiFinishReason(v1::FINISH_REASON_CONTEXT), "length");
  EXPECT_EQ(OpenAiFinishReason(v1::FINISH_REASON_CANCELLED), "cancelled");
  EXPECT_EQ(OpenAiFinishReason(v1::FINISH_REASON_UNSPECIFIED), "stop");
}

TEST(OpenAiApiTest, ModelsJson) {
  v1::ListModelsResponse models;
  v1::ModelInfo* model = models.add_models();
  model->set_name("tiny");
  model->set_context_length(512);
  model->set_workers(2);
  EXPECT_EQ(ToJsonText(OpenAiModelsJson(models)),
            R"({"object":"list","data":[{"id":"tiny","object":"model","created":0,)"
            R"("owned_by":"kvmesh","context_length":512,"workers":2}]})");
}

}  // namespace
v1::TokenLogprob Lp(int32_t token, std::string text, std::optional<float> logprob,
                    std::vector<std::pair<std::string, float>> top = {}) {
  v1::TokenLogprob lp;
  lp.set_token(token);
  lp.set_text(std::move(text));
  if (logprob) lp.set_logprob(*logprob);
  for (auto& [t, l] : top) {
    v1::TokenLogprob* alt = lp.add_top();
    alt->set_text(t);
    alt->set_logprob(l);
  }
  return lp;
}

TEST(OpenAiApiTest, CompletionEchoWithLogprobs) {
  StatusOr<OpenAiCompletionRequest> parsed = ParseOpenAiCompletionRequest(
      json::parse(R"({"prompt": "Hi there", "echo": true, "logprobs": 1, "max_tokens": 0})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  const v1::GenerationOptions& o = parsed->request.options();
  EXPECT_TRUE(o.has_max_tokens());
  EXPECT_EQ(o.max_tokens(), 0);
  EXPECT_TRUE(o.logprobs());
  EXPECT_TRUE(o.prompt_logprobs());
  EXPECT_EQ(o.top_logprobs(), 1u);

  GenerationResult result;
  result.prompt_logprobs = {Lp(1, "Hi", std::nullopt), Lp(2, " there", -1.5f, {{" you", -0.5f}})};
  result.text = "!";
  result.logprobs = {Lp(3, "!", -0.25f, {{"!", -0.25f}})};
  result.finish_reason = v1::FINISH_REASON_LENGTH;
  const auto out = OpenAiCompletionJson({"cmpl-1", 1, "tiny"}, result, parsed->shape);
  EXPECT_EQ(out["choices"][0]["text"], "Hi there!");
  EXPECT_EQ(ToJsonText(out["choices"][0]["logprobs"]),
            R"({"tokens":["Hi"," there","!"],"token_logprobs":[null,-1.5,-0.25],)"
            R"("top_logprobs":[null,{" you":-0.5," there":-1.5},{"!":-0.25}],)"
            R"("text_offset":[0,2,8]})");
}

TEST(OpenAiApiTest, BestOfReturnsTheChoicesWithTheHighestMeanLogprob) {
  StatusOr<OpenAiCompletionRequest> parsed =
      ParseOpenAiCompletionRequest(json::parse(R"({"prompt": "x", "n": 2, "best_of": 3})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->request.options().n(), 3u);       // generated
  EXPECT_TRUE(parsed->request.options().logprobs());  // for the ranking
  GenerationResult result;
  result.text = "a";
  result.logprobs = {Lp(1, "a", -3.0f)};
  result.more_choices.resize(2);
  result.more_choices[0].text = "b";
  result.more_choices[0].logprobs = {Lp(2, "b", -1.0f), Lp(2, "b", -2.0f)};  // mean -1.5
  result.more_choices[1].text = "c";
  result.more_choices[1].logprobs = {Lp(3, "c", -0.5f)};
  result.usage.set_prompt_tokens(5);
  result.usage.set_completion_tokens(1);
  result.more_choices[0].usage.set_completion_tokens(2);
  result.more_choices[1].usage.set_completion_tokens(1);
  const auto out = OpenAiCompletionJson({"cmpl-1", 1, "tiny"}, result, parsed->shape);
  ASSERT_EQ(out["choices"].size(), 2u);
  EXPECT_EQ(out["choices"][0]["text"], "c");
  EXPECT_EQ(out["choices"][0]["index"], 0);
  EXPECT_EQ(out["choices"][1]["text"], "b");
  EXPECT_TRUE(out["choices"][0]["logprobs"].is_null()) << "not asked for";
  EXPECT_EQ(out["usage"]["completion_tokens"], 4) << "every generated choice counts";
  EXPECT_EQ(out["usage"]["prompt_tokens"], 5);
}

TEST(OpenAiApiTest, ChatLogprobsAndChoices) {
  StatusOr<OpenAiChatRequest> parsed = ParseOpenAiChatRequest(json::parse(
      R"({"messages": [{"role": "user", "content": "x"}], "n": 2, "logprobs": true,
          "top_logprobs": 2})"));
  ASSERT_TRUE(parsed.ok()) << parsed.status().ToString();
  EXPECT_EQ(parsed->request.options().n(), 2u);
  EXPECT_EQ(parsed->request.options().top_logprobs(), 2u);
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "functions": [{"name": "f"}]})"),
            "\"functions\" / \"function_call\" (legacy function calling; use tools) is not "
            "supported by kvmesh");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}],
                          "modalities": ["text", "audio"]})"),
            "field \"modalities\" may only hold \"text\", got array");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})"),
            "field \"top_logprobs\" needs \"logprobs\": true");
  EXPECT_EQ(ChatError(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true,
                          "top_logprobs": 21})"),
            "field \"top_logprobs\" must be between 0 and 20, got 21");
  GenerationResult result;
  result.text = "A";
  result.logprobs = {Lp(7, "A", -0.5f, {{"A", -0.5f}, {"B", -1.25f}})};
  result.more_choices.resize(1);
  result.more_choices[0].text = "B";
  const auto out = OpenAiChatCompletionJson({"c", 1, "tiny"}, result, /*logprobs=*/true);
  ASSERT_EQ(out["choices"].size(), 2u);
  EXPECT_EQ(out["choices"][1]["index"], 1);
  EXPECT_EQ(out["choices"][1]["message"]["content"], "B");
  EXPECT_EQ(ToJsonText(out["choices"][0]["logprobs"]),
            R"({"content":[{"token":"A","logprob":-0.5,"bytes":[65],"top_logprobs":[)"
            R"({"token":"A","logprob":-0.5,"bytes":[65]},{"token":"B","logprob":-1.25,)"
            R"("bytes":[66]}]}],"refusal":null})");
}

}  // namespace kvmesh::router::gateway
