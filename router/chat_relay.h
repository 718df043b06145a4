// ChatRelay: sits between a worker's generated stream and a chat client,
// turning the model's raw text into the parts of an assistant message —
// answer text, reasoning and tool calls — with the model's own syntax
// (router/chat/assistant_output.h), and reporting FINISH_REASON_TOOL_CALLS
// when the model called a tool and then ended its turn.
//
// One relay per chat request, used by the thread that relays its stream.
#pragma once

#include <string_view>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "kvmesh/v1/inference.pb.h"
#include "router/chat/assistant_output.h"
#include "router/chat/chat_template.h"
#include "router/inference_core.h"

namespace kvmesh::router {

class ChatRelay {
 public:
  // `prompt` is the rendered prompt text (does it open a <think>?),
  // `tools_json` the tools it offered (empty: none, so no calls are parsed).
  // `forced_call`: the output is a call forced by constrained decoding, in
  // ForcedCallFormat() of the model's format, with no reasoning before it.
  ChatRelay(const ChatTemplate& chat_template, std::string_view prompt, std::string_view tools_json,
            bool forced_call = false);

  // The control tokens the worker must show as text for the parser to see
  // the syntax's markers (ids of markers the tokenizer holds as one token).
  static std::vector<int32_t> MarkerTokens(const Tokenizer& tokenizer, const OutputSyntax& syntax);

  // `message` with its text split into text, reasoning and tool calls.
  v1::GenerateTextResponse Relay(const v1::GenerateTextResponse& message);

 private:
  AssistantOutputParser parser_;
};

}  // namespace kvmesh::router
