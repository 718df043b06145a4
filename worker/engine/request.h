// Request: one generation request as the engine sees it — its tokens, how far
// the model has computed them, its KV blocks and its sampling/streaming state.
//
// Created by the engine from an EngineRequest, owned by the engine, and
// touched only on the engine loop thread. The scheduler reads and updates the
// counters and block tables; the engine samples, streams and finishes.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/grammar/grammar_matcher.h"
#include "common/status.h"
#include "common/tokenizer/streaming_detokenizer.h"
#include "worker/engine/grammar_constraint.h"
#include "worker/kv/kv_cache_manager.h"
#include "worker/sampling/logprobs.h"
#include "worker/sampling/sampler.h"
#include "worker/sampling/stop_matcher.h"

namespace kvmesh {

using SteadyClock = std::chrono::steady_clock;

enum class FinishReason { kNone, kLength, kStop, kCancelled, kContext, kDeadline, kError };
std::string_view FinishReasonName(FinishReason reason);

// One delivery to the request's client: new tokens and the text they
// complete; the last one also carries the finish reason and usage.
struct RequestOutput {
  std::vector<int32_t> tokens;
  std::string text;
  bool finished = false;
  FinishReason finish_reason = FinishReason::kNone;
  Status error;  // set when finish_reason is kError
  int32_t prompt_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens served from the prefix cache
  int32_t completion_tokens = 0;
  double queue_ms = 0;
  double ttft_ms = 0;
  double total_ms = 0;
  uint64_t seed = 0;
  std::string stop_sequence;  // the stop string that ended it, if one did
  // A progress output (EngineRequest::report_prefill_progress): nothing
  // generated yet, this many prompt tokens computed.
  int32_t prompt_tokens_computed = 0;
  // With EngineRequest::logprobs: one per token of `tokens`.
  std::vector<TokenLogprob> logprobs;
  // With EngineRequest::prompt_logprobs, on choice 0's first output that
  // has tokens or finishes: prompt tokens 1 … n-1 (the first has none).
  std::vector<TokenLogprob> prompt_logprobs;
  // The choice (0 … n-1) this output belongs to, and whether it is the last
  // output of the whole request (every choice finished).
  int32_t choice = 0;
  bool last_of_request = false;
};

// Called on the engine thread for every output; must not block (hand the
// output to another thread's queue).
using OutputCallback = std::function<void(RequestOutput&&)>;

// What a client submits.
struct EngineRequest {
  std::string id;
  std::vector<int32_t> prompt;
  SamplingParams sampling;
  std::string cache_salt;
  // Blocks peer_first_block, peer_first_block + 1, … of the prompt as a
  // peer computed them (peer prefix fetch): put in the cache before the
  // request is admitted, so it finds them as a prefix hit. Submit keeps only
  // the leading pages that CheckPeerPages accepts.
  std::vector<KvPage> peer_pages;
  int32_t peer_first_block = 0;
  // Control tokens whose text the output shows (GenerateRequest's
  // render_special_tokens).
  std::vector<int32_t> render_special_tokens;
  // Prefixes to keep cached after the request ends (Anthropic cache_control
  // breakpoints): the first `tokens` prompt tokens for `seconds`.
  struct RetainPrefix {
    int32_t tokens = 0;
    int32_t seconds = 0;
  };
  std::vector<RetainPrefix> retain;
  // Output constrained to a grammar: only tokens it allows are sampled, and
  // the end only where it accepts (unset: unconstrained).
  std::optional<Constraint> constraint;
  // Also output progress (an empty RequestOutput with
  // prompt_tokens_computed) after each prefill chunk that is not the last.
  bool report_prefill_progress = false;
  // Log-probabilities of generated tokens (with the top_logprobs most
  // likely alternatives) and of the prompt's tokens (computed in the
  // prefill; the request then reuses no cached prefix).
  bool logprobs = false;
  int32_t top_logprobs = 0;
  bool prompt_logprobs = false;
  // Choices (>= 1): after the prompt is computed the request forks into n
  // sequences that share its KV pages, choice i sampling with seed + i when
  // a seed is set.
  int32_t n = 1;
  std::optional<SteadyClock::time_point> deadline;
  OutputCallback on_output;
};

// The choices of one request: they share its id (choice i > 0 runs as
// "ID#i") and it ends when the last of them finishes.
struct RequestFamily {
  std::string id;
  int32_t open = 1;  // choices not finished yet
};

struct Request {
  explicit Request(EngineRequest r, int n_vocab, const Tokenizer& tokenizer);

  EngineRequest spec;
  std::vector<int32_t> tokens;  // prompt, then generated tokens
  int32_t num_prompt_tokens = 0;
  int32_t num_computed = 0;        // tokens whose K/V are in the cache
  int32_t num_cached_tokens = -1;  // prefix-cache hit at first admission (-1: not yet)
  int32_t num_preemptions = 0;
  int32_t times_passed_over = 0;  // admissions that took a later request first
  SequenceBlocks kv;

  Sampler sampler;
  std::optional<grammar::GrammarMatcher> matcher;  // with spec.constraint
  StreamingDetokenizer detokenizer;
  StopMatcher stop_matcher;

  SteadyClock::time_point arrival;
  std::optional<SteadyClock::time_point> first_scheduled;
  std::optional<SteadyClock::time_point> first_token;
  bool cancel_requested = false;

  int32_t choice = 0;
  std::shared_ptr<RequestFamily> family;      // set when spec.n > 1
  bool forked = false;                        // choice 0: its siblings exist
  std::vector<TokenLogprob> prompt_logprobs;  // scored so far (tokens 1 …)
  bool prompt_logprobs_sent = false;

  // The prompt's logprobs are still to compute (so the prefill needs every
  // position's logits and no cached prefix).
  bool wants_prompt_logprobs() const { return spec.prompt_logprobs && !prompt_logprobs_sent; }
  const std::string& family_id() const { return family ? family->id : spec.id; }

  int32_t num_generated() const { return static_cast<int32_t>(tokens.size()) - num_prompt_tokens; }
  int32_t num_uncomputed() const { return static_cast<int32_t>(tokens.size()) - num_computed; }
};

}  // namespace kvmesh
