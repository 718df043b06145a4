#include "worker/service/generate_request.h"

#include <algorithm>

namespace kvmesh {
namespace {

StatusOr<SamplingParams> ToSampling(const v1::GenerateRequest& req, int32_t n_vocab) {
  SamplingParams p;
  const v1::SamplingParams& s = req.sampling();
  // API defaults: temperature 1 and no truncation (as OpenAI's API behaves).
  p.temperature = s.has_temperature() ? s.temperature() : 1.0f;
  p.top_k = s.has_top_k() ? s.top_k() : 0;
  p.top_p = s.has_top_p() ? s.top_p() : 1.0f;
  p.min_p = s.has_min_p() ? s.min_p() : 0.0f;
  p.repeat_penalty = s.has_repetition_penalty() ? s.repetition_penalty() : 1.0f;
  p.presence_penalty = s.presence_penalty();
  p.frequency_penalty = s.frequency_penalty();
  if (s.has_seed()) p.seed = s.seed();
  p.max_tokens = req.max_tokens();
  p.stop.assign(req.stop().begin(), req.stop().end());
  p.ignore_eos = req.ignore_eos();
  for (const auto& [id, bias] : s.logit_bias()) {
    if (id >= n_vocab) {
      return InvalidArgumentError("logit_bias names token " + std::to_string(id) +
                                  ", outside the vocabulary (0.." + std::to_string(n_vocab - 1) +
                                  ")");
    }
    p.logit_bias.emplace_back(id, bias);
  }
  std::sort(p.logit_bias.begin(), p.logit_bias.end());  // a map's order is not fixed
  RETURN_IF_ERROR(p.Validate());
  return p;
}

}  // namespace

Status CheckNoUnknownFields(const google::protobuf::Message& m, const std::string& what) {
  const auto& unknown = m.GetReflection()->GetUnknownFields(m);
  if (unknown.empty()) return Status::Ok();
  return InvalidArgumentError(what + " has an unknown field (number " +
                              std::to_string(unknown.field(0).number()) +
                              "); the client and worker protos disagree");
}

StatusOr<EngineRequest> ValidateGenerateRequest(const v1::GenerateRequest& req,
                                                const Tokenizer& tokenizer,
                                                GrammarConstraints& constraints) {
  RETURN_IF_ERROR(CheckNoUnknownFields(req, "GenerateRequest"));
  RETURN_IF_ERROR(CheckNoUnknownFields(req.sampling(), "GenerateRequest.sampling"));
  if (req.has_peer_fetch()) {
    RETURN_IF_ERROR(CheckNoUnknownFields(req.peer_fetch(), "GenerateRequest.peer_fetch"));
  }
  if (req.max_tokens() < 0) {
    return InvalidArgumentError("max_tokens must be >= 0, got " + std::to_string(req.max_tokens()));
  }
  ASSIGN_OR_RETURN(SamplingParams sampling, ToSampling(req, tokenizer.n_vocab()));

  EngineRequest er;
  er.id = req.request_id();
  if (req.prompt_tokens_size() > 0 && !req.prompt_text().empty()) {
    return InvalidArgumentError("give prompt_tokens or prompt_text, not both");
  }
  if (req.prompt_tokens_size() > 0) {
    er.prompt.assign(req.prompt_tokens().begin(), req.prompt_tokens().end());
  } else {
    er.prompt = tokenizer.Encode(req.prompt_text(), req.add_special(), req.parse_special());
  }
  er.sampling = std::move(sampling);
  er.cache_salt = req.cache_salt();
  er.report_prefill_progress = true;
  er.logprobs = req.logprobs();
  er.top_logprobs = static_cast<int32_t>(std::min<uint32_t>(req.top_logprobs(), 1000));
  er.prompt_logprobs = req.prompt_logprobs();
  er.n = std::max<int32_t>(1, static_cast<int32_t>(std::min<uint32_t>(req.n(), 1000)));
  for (const v1::RetainPrefix& span : req.retain()) {
    er.retain.push_back({static_cast<int32_t>(std::min<uint64_t>(span.tokens(), er.prompt.size())),
                         static_cast<int32_t>(std::min<uint32_t>(span.seconds(), 3600))});
  }
  for (int i = 0; i < req.render_special_tokens_size(); ++i) {
    const int32_t id = req.render_special_tokens(i);
    if (id < 0 || id >= tokenizer.n_vocab()) {
      return InvalidArgumentError("render_special_tokens[" + std::to_string(i) +
                                  "] = " + std::to_string(id) + " is outside the vocabulary (0.." +
                                  std::to_string(tokenizer.n_vocab() - 1) + ")");
    }
    er.render_special_tokens.push_back(id);
  }
  // After render_special_tokens: the grammar sees the control tokens the
  // request renders as text (a tool-call marker, say) as that text.
  if (!req.grammar().empty()) {
    ASSIGN_OR_RETURN(er.constraint, constraints.Get(req.grammar(), er.render_special_tokens));
  }
  return er;
}

}  // namespace kvmesh
