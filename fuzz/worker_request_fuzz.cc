// libFuzzer target: what a worker does with a GenerateRequest before its
// engine runs it. The input is a serialized kvmesh.v1.GenerateRequest (seeds:
// worker_request_seed_writer). ValidateGenerateRequest (the checks and
// conversions of WorkerServiceImpl::Generate, as a pure function) either
// names what is wrong or returns the EngineRequest; one that Engine::Submit
// would take then becomes the engine's Request (sampler, stop matcher,
// detokenizer, grammar matcher) and generates a few tokens from fixed logits,
// as Engine::SampleOne does.
//
// Besides crashes and sanitizer reports, these are findings:
//   - an accepted request whose logit_bias or render_special_tokens ids lie
//     outside the vocabulary, or whose retained prefix outruns the prompt;
//   - a grammar in the request without a constraint in the result;
//   - a sampled token outside the vocabulary, or one the grammar forbids.
// The tokenizer (ggml-vocab-llama-spm.gguf) is loaded once; see fuzz_vocab.h.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"
#include "common/tokenizer/tokenizer.h"
#include "fuzz/fuzz_vocab.h"
#include "kvmesh/v1/worker.pb.h"
#include "worker/engine/engine.h"
#include "worker/engine/grammar_constraint.h"
#include "worker/engine/request.h"
#include "worker/sampling/logprobs.h"
#include "worker/service/generate_request.h"

namespace {

using kvmesh::EngineRequest;
using kvmesh::Request;
using kvmesh::Tokenizer;

constexpr char kVocabFile[] = "ggml-vocab-llama-spm.gguf";
// The context of the worker this stands for (Engine's max_model_len).
constexpr int32_t kMaxModelLen = 2048;
// Tokens generated per accepted request; each may compute a grammar mask
// over the whole vocabulary.
constexpr int kMaxSteps = 3;

const Tokenizer& SharedTokenizer() {
  static const Tokenizer* tokenizer = [] {
    const std::string path = kvmesh::fuzz::VocabDir() + "/" + kVocabFile;
    kvmesh::StatusOr<std::unique_ptr<Tokenizer>> loaded = kvmesh::fuzz::LoadTokenizer(path);
    if (!loaded.ok()) {
      std::fprintf(stderr,
                   "worker_request_fuzz: %s (set KVMESH_FUZZ_VOCAB_DIR to the folder holding "
                   "%s, e.g. ../shared/vocab)\n",
                   loaded.status().ToString().c_str(), kVocabFile);
      std::exit(1);
    }
    return std::move(loaded).value().release();
  }();
  return *tokenizer;
}

// Logits the sampler sees at every step: fixed, spread over a range wide
// enough that truncation and penalties change the choice.
const std::vector<float>& FixedLogits(int32_t n_vocab) {
  static const auto* logits = [n_vocab] {
    auto* row = new std::vector<float>(static_cast<size_t>(n_vocab));
    for (int32_t id = 0; id < n_vocab; ++id) {
      (*row)[id] = static_cast<float>((static_cast<uint32_t>(id) * 7919u) % 4096u) / 256.0f - 8.0f;
    }
    return row;
  }();
  return *logits;
}

[[noreturn]] void Fail(const kvmesh::v1::GenerateRequest& request, const std::string& what) {
  std::fprintf(stderr, "%s\nrequest: %s\n", what.c_str(), request.ShortDebugString().c_str());
  std::abort();
}

// What the conversion promises of an accepted request.
void CheckAccepted(const kvmesh::v1::GenerateRequest& request, const EngineRequest& er,
                   int32_t n_vocab) {
  for (const auto& [id, bias] : er.sampling.logit_bias) {
    if (id < 0 || id >= n_vocab) Fail(request, "accepted logit_bias id " + std::to_string(id));
  }
  for (int32_t id : er.render_special_tokens) {
    if (id < 0 || id >= n_vocab) {
      Fail(request, "accepted render_special_tokens id " + std::to_string(id));
    }
  }
  for (const EngineRequest::RetainPrefix& span : er.retain) {
    if (span.tokens < 0 || span.tokens > static_cast<int32_t>(er.prompt.size())) {
      Fail(request, "retained prefix of " + std::to_string(span.tokens) + " tokens, prompt of " +
                        std::to_string(er.prompt.size()));
    }
  }
  if (!request.grammar().empty() && !er.constraint) {
    Fail(request, "a grammar was given but the engine request has no constraint");
  }
}

// Engine::Submit's checks that need no engine state (engine.cc), repeated:
// only requests past them become a Request.
bool SubmitWouldAccept(const EngineRequest& er, int32_t n_vocab) {
  if (er.prompt.empty() || static_cast<int64_t>(er.prompt.size()) >= kMaxModelLen) return false;
  for (int32_t id : er.prompt) {
    if (id < 0 || id >= n_vocab) return false;
  }
  return er.sampling.Validate().ok() && er.n >= 1 && er.n <= kvmesh::kMaxChoices &&
         er.top_logprobs >= 0 && er.top_logprobs <= kvmesh::kMaxTopLogprobs;
}

// Engine::SampleOne and Finish without the engine: mask, sample, advance the
// grammar, stream through the detokenizer and the stop matcher.
void Generate(const kvmesh::v1::GenerateRequest& request, Request* r, const Tokenizer& tokenizer) {
  const int32_t n_vocab = tokenizer.n_vocab();
  const std::vector<float>& logits = FixedLogits(n_vocab);
  std::vector<float> masked;
  for (int step = 0; step < kMaxSteps && step < r->spec.sampling.max_tokens; ++step) {
    const float* row = logits.data();
    if (r->matcher) {
      if (!kvmesh::MaskLogits(*r->spec.constraint, *r->matcher, row, n_vocab, &masked)) break;
      row = masked.data();
    }
    const int32_t token = r->sampler.Sample(row, r->tokens);
    if (token < 0 || token >= n_vocab) Fail(request, "sampled token " + std::to_string(token));
    if (r->matcher && std::isinf(row[token])) {
      Fail(request, "sampled token " + std::to_string(token) + ", which the grammar forbids");
    }
    if (r->matcher && !tokenizer.IsEndOfGeneration(token)) {
      r->matcher->Accept(r->spec.constraint->vocabulary->piece(token));
    }
    if (!r->spec.sampling.ignore_eos && tokenizer.IsEndOfGeneration(token)) break;
    r->tokens.push_back(token);
    (void)r->stop_matcher.Push(r->detokenizer.Feed(token));
    if (r->stop_matcher.stopped()) return;
  }
  (void)r->stop_matcher.Push(r->detokenizer.Flush());
  if (!r->stop_matcher.stopped()) (void)r->stop_matcher.Flush();
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const Tokenizer& tokenizer = SharedTokenizer();
  (void)FixedLogits(tokenizer.n_vocab());
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvmesh::v1::GenerateRequest request;
  if (!request.ParseFromArray(data, static_cast<int>(size))) return 0;
  const Tokenizer& tokenizer = SharedTokenizer();
  // A fresh cache per input, so an input's outcome never depends on the
  // grammars of earlier ones.
  kvmesh::GrammarConstraints constraints(tokenizer);
  kvmesh::StatusOr<EngineRequest> converted =
      kvmesh::ValidateGenerateRequest(request, tokenizer, constraints);
  if (!converted.ok()) return 0;
  EngineRequest er = std::move(converted).value();
  CheckAccepted(request, er, tokenizer.n_vocab());
  if (!SubmitWouldAccept(er, tokenizer.n_vocab())) return 0;
  if (!er.sampling.seed) er.sampling.seed = 0;  // reproducible: no random seed
  Request r(std::move(er), tokenizer.n_vocab(), tokenizer);
  Generate(request, &r, tokenizer);
  return 0;
}
