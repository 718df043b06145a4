#include "worker/engine/request.h"

namespace kvmesh {

std::string_view FinishReasonName(FinishReason reason) {
  switch (reason) {
    case FinishReason::kNone:
      return "none";
    case FinishReason::kLength:
      return "length";
    case FinishReason::kStop:
      return "stop";
    case FinishReason::kCancelled:
      return "cancelled";
    case FinishReason::kContext:
      return "context";
    case FinishReason::kDeadline:
      return "deadline";
    case FinishReason::kError:
      return "error";
  }
  return "?";
}

Request::Request(EngineRequest r, int n_vocab, const Tokenizer& tokenizer)
    : spec(std::move(r)),
      tokens(spec.prompt),
      num_prompt_tokens(static_cast<int32_t>(spec.prompt.size())),
      sampler(spec.sampling, n_vocab),
      detokenizer(tokenizer, {.shown_special = spec.render_special_tokens}),
      stop_matcher(spec.sampling.stop),
      arrival(SteadyClock::now()) {
  if (spec.constraint) matcher.emplace(spec.constraint->grammar);
}

}  // namespace kvmesh
