// SamplingParams: how the next token is chosen from the logits, plus the
// limits that end a generation. Validate() names the first bad field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

namespace kvmesh {

struct SamplingParams {
  // 0 means greedy (argmax after penalties); otherwise logits are divided by it.
  float temperature = 0.8f;
  int top_k = 40;                  // 0 disables
  float top_p = 0.95f;             // 1 disables
  float min_p = 0.05f;             // 0 disables; relative to the most likely token
  float repeat_penalty = 1.0f;     // 1 disables (llama.cpp style: divide positive logits)
  int repeat_last_n = 64;          // how many recent tokens the penalties look at
  float presence_penalty = 0.0f;   // OpenAI style: subtract once per seen token
  float frequency_penalty = 0.0f;  // OpenAI style: subtract per occurrence
  // Same seed, same logits → same tokens. Unset: chosen at random (and reported).
  std::optional<uint64_t> seed;

  int max_tokens = 128;
  std::vector<std::string> stop;  // generation ends before any of these strings
  bool ignore_eos = false;
  // Added to these tokens' logits before anything else (OpenAI logit_bias:
  // -100 bans a token, +100 all but forces it); at most 1024 entries.
  std::vector<std::pair<int32_t, float>> logit_bias;

  Status Validate() const;
  bool greedy() const { return temperature <= 0.0f; }
};

}  // namespace kvmesh
