#include "worker/engine/grammar_constraint.h"

#include <algorithm>
#include <limits>

namespace kvmesh {

bool MaskLogits(const Constraint& c, const grammar::GrammarMatcher& matcher, const float* logits,
                int32_t n_vocab, std::vector<float>* out) {
  const std::shared_ptr<const grammar::TokenMask> mask =
      c.masks->Get(*c.grammar, *c.vocabulary, matcher.stacks());
  out->assign(logits, logits + n_vocab);
  bool any = false;
  for (int32_t id = 0; id < n_vocab; ++id) {
    if (id < c.vocabulary->size() && grammar::MaskAllows(*mask, id)) {
      any = true;
    } else {
      (*out)[id] = -std::numeric_limits<float>::infinity();
    }
  }
  return any;
}

std::shared_ptr<const grammar::TokenVocabulary> GrammarConstraints::Vocabulary(
    const std::vector<int32_t>& shown) {
  for (auto it = vocabularies_.begin(); it != vocabularies_.end(); ++it) {
    if (it->first == shown) {
      vocabularies_.splice(vocabularies_.begin(), vocabularies_, it);
      return it->second;
    }
  }
  std::vector<std::string> pieces(static_cast<size_t>(tokenizer_.n_vocab()));
  std::vector<int32_t> ends;
  for (int32_t id = 0; id < tokenizer_.n_vocab(); ++id) {
    if (tokenizer_.IsEndOfGeneration(id)) {
      ends.push_back(id);
      continue;
    }
    const bool show = std::find(shown.begin(), shown.end(), id) != shown.end();
    pieces[id] = tokenizer_.TokenToPiece(id, show);
  }
  auto vocab = std::make_shared<const grammar::TokenVocabulary>(std::move(pieces), std::move(ends));
  vocabularies_.emplace_front(shown, vocab);
  if (vocabularies_.size() > kMaxVocabularies) vocabularies_.pop_back();
  return vocab;
}

StatusOr<Constraint> GrammarConstraints::Get(const std::string& gbnf,
                                             const std::vector<int32_t>& shown_special) {
  std::vector<int32_t> shown = shown_special;
  std::sort(shown.begin(), shown.end());
  shown.erase(std::unique(shown.begin(), shown.end()), shown.end());
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto it = grammars_.begin(); it != grammars_.end(); ++it) {
    if (it->gbnf == gbnf && it->shown == shown) {
      grammars_.splice(grammars_.begin(), grammars_, it);
      return Constraint{it->grammar, Vocabulary(shown), it->masks};
    }
  }
  ASSIGN_OR_RETURN(grammar::Grammar parsed, grammar::Grammar::ParseGbnf(gbnf));
  CompiledEntry entry{gbnf, std::make_shared<const grammar::Grammar>(std::move(parsed)),
                      std::make_shared<grammar::MaskCache>(), shown};
  Constraint constraint{entry.grammar, Vocabulary(shown), entry.masks};
  grammars_.push_front(std::move(entry));
  if (grammars_.size() > kMaxGrammars) grammars_.pop_back();
  return constraint;
}

}  // namespace kvmesh
