// Grammar constraints for generation: a compiled grammar with its shared
// mask cache, and the vocabulary it masks, as the worker hands them to the
// engine with a request (EngineRequest::constraint).
//
// GrammarConstraints compiles GBNF text and builds token vocabularies once
// and keeps them (bounded LRUs), so requests with the same grammar share the
// compiled grammar and every mask computed for it.
//
// Thread-safety: GrammarConstraints is thread-safe; a Constraint is shared
// by the requests that use it (its mask cache locks inside).
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "common/grammar/grammar.h"
#include "common/grammar/grammar_matcher.h"
#include "common/grammar/token_mask.h"
#include "common/status.h"
#include "common/tokenizer/tokenizer.h"

namespace kvmesh {

struct Constraint {
  std::shared_ptr<const grammar::Grammar> grammar;
  std::shared_ptr<const grammar::TokenVocabulary> vocabulary;
  std::shared_ptr<grammar::MaskCache> masks;
};

// Copies `logits` (n_vocab of them) into `out` with every token the
// matcher's state does not allow set to -infinity (the mask comes from the
// constraint's cache). False when no token is allowed.
bool MaskLogits(const Constraint& constraint, const grammar::GrammarMatcher& matcher,
                const float* logits, int32_t n_vocab, std::vector<float>* out);

class GrammarConstraints {
 public:
  explicit GrammarConstraints(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // The constraint for GBNF `gbnf` over the tokens as the output shows them
  // (control tokens hidden, except `shown_special`). INVALID_ARGUMENT names
  // a grammar error.
  StatusOr<Constraint> Get(const std::string& gbnf, const std::vector<int32_t>& shown_special);

 private:
  std::shared_ptr<const grammar::TokenVocabulary> Vocabulary(const std::vector<int32_t>& shown);

  static constexpr size_t kMaxGrammars = 64;
  static constexpr size_t kMaxVocabularies = 4;

  const Tokenizer& tokenizer_;
  std::mutex mutex_;
  struct CompiledEntry {
    std::string gbnf;
    std::shared_ptr<const grammar::Grammar> grammar;
    std::shared_ptr<grammar::MaskCache> masks;  // per grammar and vocabulary
    std::vector<int32_t> shown;
  };
  std::list<CompiledEntry> grammars_;  // most recent first; guarded by mutex_
  std::list<std::pair<std::vector<int32_t>, std::shared_ptr<const grammar::TokenVocabulary>>>
      vocabularies_;  // guarded by mutex_
};

}  // namespace kvmesh
