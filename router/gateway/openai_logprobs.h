// Logprobs in OpenAI's two shapes, from the core's TokenLogprob entries (the
// model's log-softmax before sampling; see common.proto):
//   chat:        {"content": [{"token", "logprob", "bytes", "top_logprobs":
//                [{"token", "logprob", "bytes"}]}], "refusal": null}
//   completions: {"tokens", "token_logprobs", "top_logprobs" (token → logprob,
//                the sampled token included, null for a prompt's first
//                token), "text_offset" (byte offsets into the choice's text)}
// Token text that is not valid UTF-8 on its own (part of a character) is
// shown with U+FFFD in "token" and exactly in "bytes".
#pragma once

#include <cstddef>
#include <nlohmann/json.hpp>
#include <vector>

#include "kvmesh/v1/common.pb.h"

namespace kvmesh::router::gateway {

// Chat: the entries of "content" for `entries`.
nlohmann::ordered_json ChatLogprobEntries(const std::vector<v1::TokenLogprob>& entries);
nlohmann::ordered_json ChatLogprobs(const std::vector<v1::TokenLogprob>& entries);

// Completions: appends `entries` to `out` (an object with the four arrays, made
// when null), their text starting at byte `*offset` of the choice's text;
// advances `*offset`.
void AppendCompletionLogprobs(const std::vector<v1::TokenLogprob>& entries, size_t* offset,
                              nlohmann::ordered_json* out);

// The mean logprob per token of `entries` (best_of's ranking); -inf when
// there are none.
double MeanLogprob(const std::vector<v1::TokenLogprob>& entries);

}  // namespace kvmesh::router::gateway
