// Grammar: a context-free grammar over bytes, the form every constraint
// (GBNF text, JSON Schema, regular expressions) is compiled to before it
// masks a model's tokens (grammar_matcher.h, token_mask.h).
//
// Text is matched as UTF-8 bytes: a character class such as [^"\\] becomes
// the alternatives of UTF-8 byte sequences of its code points, so a matched
// text is always valid UTF-8 and tokens that split a character are handled
// without special cases.
//
// Layout: every alternative of every rule is a run of elements in one flat
// array, ended by a kEnd element; a rule is the list of its alternatives'
// start positions. A kBytes element matches one byte of its set; a kRule
// element expands to the alternatives of its rule.
//
// GBNF (ParseGbnf) follows llama.cpp's grammar syntax, so users' grammars
// carry over: `name ::= alternatives`, `|`, "literals" with \n \r \t \\ \"
// \xHH \uHHHH \UHHHHHHHH escapes, [character classes] with ranges and ^,
// `.` (any character), ( groups ), the postfix operators * + ? {m} {m,}
// {m,n}, and # comments. The start rule is `root`. Errors name the line and
// column. Left recursion is refused (a pushdown matcher would loop).
//
// A Grammar is immutable once built; share it across threads freely.
#pragma once

#include <bitset>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/status.h"

namespace kvmesh::grammar {

struct Element {
  enum class Type : uint8_t { kEnd, kBytes, kRule };
  Type type = Type::kEnd;
  int32_t value = 0;  // kBytes: index into byte_sets(); kRule: rule id
};

using ByteSet = std::bitset<256>;

class Grammar {
 public:
  // Parses GBNF text (see above).
  static StatusOr<Grammar> ParseGbnf(std::string_view text);

  const std::vector<Element>& elements() const { return elements_; }
  const std::vector<ByteSet>& byte_sets() const { return byte_sets_; }
  // The start positions of rule `id`'s alternatives.
  const std::vector<int32_t>& alternatives(int32_t rule) const { return rules_[rule]; }
  const std::string& rule_name(int32_t rule) const { return rule_names_[rule]; }
  int32_t num_rules() const { return static_cast<int32_t>(rules_.size()); }
  int32_t root() const { return root_; }

  // Builds a Grammar from parsed rules; used by the parser. Each rule is its
  // alternatives, each a sequence of elements (kEnd not included).
  class Builder;

 private:
  std::vector<Element> elements_;
  std::vector<ByteSet> byte_sets_;
  std::vector<std::vector<int32_t>> rules_;
  std::vector<std::string> rule_names_;
  int32_t root_ = 0;
};

class Grammar::Builder {
 public:
  // The id of rule `name`, created (with no alternatives yet) on first use.
  int32_t Rule(std::string_view name);
  // A new rule with a unique name derived from `base` (for groups and
  // repetitions).
  int32_t NewRule(std::string_view base);
  int32_t ByteSetId(const ByteSet& set);
  // Adds an alternative to `rule`.
  void AddAlternative(int32_t rule, std::vector<Element> sequence);
  bool defined(int32_t rule) const { return defined_[rule]; }
  const std::string& name(int32_t rule) const { return names_[rule]; }
  int32_t num_rules() const { return static_cast<int32_t>(names_.size()); }

  // Checks that every used rule is defined and none is left-recursive;
  // `root` names the start rule.
  StatusOr<Grammar> Build(std::string_view root) &&;

 private:
  std::vector<std::string> names_;
  std::unordered_map<std::string, int32_t> index_;  // name → rule id
  std::vector<bool> defined_;
  std::vector<std::vector<std::vector<Element>>> alternatives_;
  std::vector<ByteSet> byte_sets_;
};

// The UTF-8 byte-sequence alternatives of the code points [lo, hi]
// (surrogates excluded): each sequence is a list of (first, last) byte
// ranges, one per byte.
std::vector<std::vector<std::pair<uint8_t, uint8_t>>> Utf8Sequences(uint32_t lo, uint32_t hi);

// GBNF string-literal escaping of `text` (for generated grammars).
std::string GbnfLiteral(std::string_view text);

}  // namespace kvmesh::grammar
