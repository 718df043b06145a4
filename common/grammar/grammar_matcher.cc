#include "common/grammar/grammar_matcher.h"

#include <algorithm>

namespace kvmesh::grammar {
namespace {

// Expands `stack` until its top is a byte element (or it is empty), adding
// every resulting stack to `out`. Rules at the top are replaced by each of
// their alternatives; an alternative's end pops. A rule reference that ends
// its alternative pushes no continuation, so right recursion (repetition)
// does not grow the stack.
void Expand(const Grammar& g, Stack stack, Stacks* out) {
  const std::vector<Element>& el = g.elements();
  while (!stack.empty() && el[stack.back()].type == Element::Type::kEnd) stack.pop_back();
  if (stack.empty() || el[stack.back()].type == Element::Type::kBytes) {
    out->push_back(std::move(stack));
    return;
  }
  const int32_t at = stack.back();
  const int32_t rule = el[at].value;
  stack.pop_back();
  if (el[at + 1].type != Element::Type::kEnd) stack.push_back(at + 1);
  const std::vector<int32_t>& alternatives = g.alternatives(rule);
  for (size_t i = 0; i < alternatives.size(); ++i) {
    Stack next = i + 1 == alternatives.size() ? std::move(stack) : stack;
    next.push_back(alternatives[i]);
    Expand(g, std::move(next), out);
    if (out->size() > GrammarMatcher::kMaxStacks) return;
  }
}

void Normalize(Stacks* stacks) {
  std::sort(stacks->begin(), stacks->end());
  stacks->erase(std::unique(stacks->begin(), stacks->end()), stacks->end());
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const Grammar> grammar)
    : grammar_(std::move(grammar)), stacks_(Start(*grammar_)) {}

Stacks GrammarMatcher::Start(const Grammar& g) {
  Stacks out;
  for (int32_t alt : g.alternatives(g.root())) Expand(g, Stack{alt}, &out);
  Normalize(&out);
  return out;
}

void GrammarMatcher::Advance(const Grammar& g, const Stacks& from, uint8_t byte, Stacks* to) {
  to->clear();
  const std::vector<Element>& el = g.elements();
  for (const Stack& stack : from) {
    if (stack.empty()) continue;
    const Element& top = el[stack.back()];
    if (!g.byte_sets()[top.value].test(byte)) continue;
    Stack next = stack;
    next.back() += 1;
    Expand(g, std::move(next), to);
    if (to->size() > kMaxStacks) {
      to->clear();
      return;
    }
  }
  Normalize(to);
}

bool GrammarMatcher::Accepting(const Stacks& stacks) {
  // Sorted: an empty stack comes first.
  return !stacks.empty() && stacks.front().empty();
}

bool GrammarMatcher::CanAccept(std::string_view bytes) const {
  Stacks current = stacks_, next;
  for (unsigned char b : bytes) {
    Advance(*grammar_, current, b, &next);
    if (next.empty()) return false;
    current.swap(next);
  }
  return true;
}

bool GrammarMatcher::Accept(std::string_view bytes) {
  Stacks current = stacks_, next;
  for (unsigned char b : bytes) {
    Advance(*grammar_, current, b, &next);
    if (next.empty()) return false;
    current.swap(next);
  }
  stacks_ = std::move(current);
  return true;
}

bool GrammarMatcher::Matches(const Grammar& g, std::string_view text) {
  Stacks current = Start(g), next;
  for (unsigned char b : text) {
    Advance(g, current, b, &next);
    if (next.empty()) return false;
    current.swap(next);
  }
  return Accepting(current);
}

}  // namespace kvmesh::grammar
