// ChatTemplate: turns a conversation into the prompt text a model was tuned on.
//
// A model states its chat format as a Jinja template (GGUF key
// `tokenizer.chat_template`). FromGguf() runs that template as it is
// written, with the Jinja engine (common/jinja), giving it the messages
// (with their tool calls and tool results), the offered tools, bos_token,
// eos_token and add_generation_prompt, as Hugging Face transformers does.
// The fixed families below stand in for models without a usable template:
// Detect() recognises a family by markers only its templates contain, and
// renders text conversations of system, user and assistant messages as the
// family's template would (the tests pin each family against its template
// rendered by a real Jinja engine). A template that neither parses nor
// matches a family is an error naming it, never a guess: the operator then
// picks a family with `--chat-template NAME` (FromName).
//
// Families, by the name FromName() takes and name() returns:
//   chatml            <|im_start|>role\n…<|im_end|>\n (Qwen, OpenHermes, …).
//                     Also the default for a model without a template, as in
//                     llama.cpp. Alias: "qwen".
//   llama2            Llama-2-chat: [INST] <<SYS>>\n…\n<</SYS>>\n\n… [/INST],
//                     contents stripped, "<s>" before every later [INST].
//   llama3            <|start_header_id|>role<|end_header_id|>\n\n…<|eot_id|>,
//                     contents trimmed.
//   llama3.1          llama3 plus the system header Llama 3.1/3.2/3.3 always
//                     write ("Cutting Knowledge Date: December 2023\nToday
//                     Date: 26 Jul 2024\n\n" before the system text; the date
//                     is the templates' own fallback when no clock is given).
//   mistral-v1        Mistral's v1 format (Mistral 7B v0.1/v0.2, Mixtral
//                     8x7B): " [INST] sys\n\nuser [/INST] answer</s>".
//   mistral-v3        v3 (Mistral 7B v0.3, Mixtral 8x22B, Large 2407): "[INST]
//                     user[/INST] answer</s>"; the system text goes before the
//                     LAST user message, as Mistral's templates put it.
//                     Alias: "mistral".
//   mistral-v3-tekken v3 without the spaces (Mistral Nemo, Ministral 8B).
//   mistral-v7        [SYSTEM_PROMPT] sys[/SYSTEM_PROMPT][INST] user[/INST]
//                     answer</s> (Mistral Large 2411).
//   mistral-v7-tekken v7 without the spaces (Mistral Small 3.1).
//   zephyr            <|role|>\n…</s>\n (Zephyr; StableLM Zephyr's
//                     <|endoftext|> when its template writes that literally).
//   phi3              <|role|>\n…<|end|>\n (Phi-3, Phi-3.5).
//
// Deliberate differences from running the template, all documented here:
//  * The leading BOS a template writes with `bos_token` is left out (except
//    llama3/llama3.1, see bos_in_text()); the caller's tokenizer adds it.
//  * phi3 keeps system messages as <|system|> turns (Phi-3.5's form) even
//    where an early Phi-3 template drops them, and writes no trailing EOS
//    when add_generation_prompt is false.
//  * Qwen3's <think> rewriting of assistant turns is not reproduced: their
//    content goes in as given. Templates' default system prompts (Mistral
//    Small 3.1) are not added. Tools and images are out of scope.
//  * strip/trim remove ASCII whitespace only.
//
// Thread-safety: a ChatTemplate is an immutable value; copy it freely and use
// it from any thread.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/jinja/jinja.h"
#include "common/status.h"
#include "router/chat/assistant_output.h"

namespace kvmesh::router {

struct ChatToolCall {
  std::string id;
  std::string name;
  std::string arguments_json;  // a JSON object
};

struct ChatMessage {
  std::string role;  // "system", "user", "assistant" or "tool"
  std::string content;
  // assistant only: the calls it made and the reasoning before its answer.
  std::vector<ChatToolCall> tool_calls = {};
  std::string reasoning_content = {};
  // tool only: the call it answers and the tool's name.
  std::string tool_call_id = {};
  std::string name = {};
};

class ChatTemplate {
 public:
  // The end-of-sequence text of SentencePiece vocabularies (Llama 2, Mistral,
  // Zephyr); pass the model's own when it differs.
  static constexpr std::string_view kDefaultEosText = "</s>";

  // Recognises the family of a GGUF `tokenizer.chat_template`. An empty
  // template gives chatml; a template that is exactly a family name gives that
  // family. `eos_text` is the text of the model's EOS token, written where a
  // template writes `eos_token` (llama2, mistral-*, zephyr).
  static StatusOr<ChatTemplate> Detect(std::string_view gguf_template,
                                       std::string_view eos_text = kDefaultEosText);
  // The model's own template, run by the Jinja engine (common/jinja) as it
  // is written; `bos_text` and `eos_text` are what it sees as bos_token and
  // eos_token. An empty template gives chatml; a template that is exactly a
  // family name gives that family; one the engine cannot parse falls back to
  // Detect() (the error names both when that fails too).
  static StatusOr<ChatTemplate> FromGguf(std::string_view gguf_template, std::string_view bos_text,
                                         std::string_view eos_text);
  // The family called `name` (see the list above; aliases "qwen", "mistral").
  static StatusOr<ChatTemplate> FromName(std::string_view name,
                                         std::string_view eos_text = kDefaultEosText);
  // Every name FromName() accepts, aliases last.
  static std::span<const std::string_view> SupportedNames();

  // The prompt for `messages`; with `add_generation_prompt` it ends where the
  // assistant's next answer begins. INVALID_ARGUMENT for an empty
  // conversation, a role other than system/user/assistant, or an order the
  // family's template rejects (llama2 and mistral-v1/v3: one optional leading
  // system message, then user and assistant alternating from user). A Jinja
  // template decides roles and order itself; what it raises is the error.
  // `tools_json` (a JSON array, or empty) is the template's `tools`
  // variable. Only Jinja templates render tools: the families, which stand
  // in for models without a template of their own, show the model none
  // (the request still succeeds; its answer is text).
  StatusOr<std::string> Render(std::span<const ChatMessage> messages, bool add_generation_prompt,
                               std::string_view tools_json = "") const;

  std::string_view name() const;

  // True when Render()'s text starts with the BOS token's text
  // (<|begin_of_text|> for llama3 and llama3.1; a Jinja template that writes
  // bos_token): tokenize it with add_special=false. Otherwise tokenize with add_special=true so the
  // tokenizer adds BOS when the model asks for it. Always tokenize rendered
  // prompts with parse_special=true: the markers are special tokens.
  bool bos_in_text() const;

  enum class Family {
    kChatml,
    kLlama2,
    kLlama3,
    kLlama31,
    kMistralV1,
    kMistralV3,
    kMistralV3Tekken,
    kMistralV7,
    kMistralV7Tekken,
    kZephyr,
    kPhi3,
    kJinja,  // the model's own template (FromGguf); name() is "jinja"
  };
  Family family() const { return family_; }

  // How the model writes tool calls and reasoning, detected from its
  // template (families: neither).
  const OutputSyntax& output_syntax() const { return output_syntax_; }

 private:
  ChatTemplate(Family family, std::string eos_text)
      : family_(family), eos_text_(std::move(eos_text)) {}

  Family family_;
  std::string eos_text_;
  // kJinja only.
  std::shared_ptr<const jinja::Template> jinja_;
  std::string bos_text_;
  bool jinja_writes_bos_ = false;
  OutputSyntax output_syntax_;
};

}  // namespace kvmesh::router
