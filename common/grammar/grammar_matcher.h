// GrammarMatcher: where a text stands in a Grammar, as a pushdown automaton
// over bytes: a set of stacks of element positions, each stack one way the
// text so far can be read, its top the byte element to match next (an
// empty stack: the text so far is a whole match).
//
// Accept() advances by a token's bytes, or refuses and leaves the state as
// it was. The state is a value (Stacks) so token_mask.h can explore from it
// and cache by it.
//
// One matcher per generation; not thread-safe. The grammar must outlive it
// (it is held by shared ownership).
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "common/grammar/grammar.h"

namespace kvmesh::grammar {

using Stack = std::vector<int32_t>;
// Sorted and without duplicates.
using Stacks = std::vector<Stack>;

class GrammarMatcher {
 public:
  // More readings than this at once means a grammar too ambiguous to match
  // in bounded time; Accept() then refuses.
  static constexpr size_t kMaxStacks = 4096;

  explicit GrammarMatcher(std::shared_ptr<const Grammar> grammar);

  // The stacks of the start: the root rule expanded.
  static Stacks Start(const Grammar& grammar);
  // The stacks after matching `byte` from `from` (empty: the byte is not
  // allowed).
  static void Advance(const Grammar& grammar, const Stacks& from, uint8_t byte, Stacks* to);
  // True when a stack is empty: the text so far is a whole match.
  static bool Accepting(const Stacks& stacks);

  bool Accept(std::string_view bytes);
  bool CanAccept(std::string_view bytes) const;
  bool accepting() const { return Accepting(stacks_); }
  // No further byte can be matched (only the end remains).
  bool complete() const { return stacks_.size() == 1 && stacks_[0].empty(); }
  const Stacks& stacks() const { return stacks_; }
  const Grammar& grammar() const { return *grammar_; }

  // True when all of `text` matches the grammar from the start.
  static bool Matches(const Grammar& grammar, std::string_view text);

 private:
  std::shared_ptr<const Grammar> grammar_;
  Stacks stacks_;
};

}  // namespace kvmesh::grammar
