// What a worker checks and converts in a GenerateRequest before its engine
// sees it: unknown fields, max_tokens, the sampling parameters, the prompt
// (tokens, or text tokenized here), special tokens to render, retained
// prefixes and the grammar. A pure function of the request, the tokenizer
// and the grammar cache: it reads no engine state, so it is tested and
// fuzzed without one (fuzz/worker_request_fuzz.cc). Engine::Submit checks
// what needs the engine (the prompt against the context, the vocabulary).
#pragma once

#include <string>

#include "common/status.h"
#include "common/tokenizer/tokenizer.h"
#include "kvmesh/v1/worker.pb.h"
#include "worker/engine/engine.h"
#include "worker/engine/grammar_constraint.h"

namespace kvmesh {

// INVALID_ARGUMENT when `message` carries fields this build does not know
// (the client's and the worker's protos disagree), naming `what`.
Status CheckNoUnknownFields(const google::protobuf::Message& message, const std::string& what);

// The engine request for `request`, or INVALID_ARGUMENT naming the field.
// The result's id is request_id (possibly empty: the caller names it); the
// caller adds the deadline, the peer pages and on_output.
StatusOr<EngineRequest> ValidateGenerateRequest(const v1::GenerateRequest& request,
                                                const Tokenizer& tokenizer,
                                                GrammarConstraints& constraints);

}  // namespace kvmesh
