#include "common/grammar/grammar.h"

#include <gtest/gtest.h>

#include "common/grammar/grammar_matcher.h"
#include "common/grammar/token_mask.h"

namespace kvmesh::grammar {
namespace {

Grammar Parse(std::string_view text) {
  auto g = Grammar::ParseGbnf(text);
  EXPECT_TRUE(g.ok()) << g.status().ToString();
  return g.ok() ? std::move(g).value() : Grammar();
}

std::string ParseError(std::string_view text) {
  auto g = Grammar::ParseGbnf(text);
  EXPECT_FALSE(g.ok()) << text;
  return g.ok() ? "" : g.status().message();
}

TEST(GrammarTest, MatchesWhatTheGbnfSays) {
  const Grammar g = Parse(R"(
    root ::= "yes" | "no" | num
    num  ::= [1-9] [0-9]{0,2}   # 1..999
  )");
  for (const char* ok : {"yes", "no", "7", "42", "999"}) {
    EXPECT_TRUE(GrammarMatcher::Matches(g, ok)) << ok;
  }
  for (const char* bad : {"", "ye", "yess", "0", "01", "1000", "maybe"}) {
    EXPECT_FALSE(GrammarMatcher::Matches(g, bad)) << bad;
  }
}

TEST(GrammarTest, RepetitionGroupsAndEscapes) {
  const Grammar g = Parse(R"(root ::= "[" (item ("," item)*)? "]"
item ::= "\"" [a-z]+ "\"" | "\x41" | "\u00e9")");
  for (const char* ok : {"[]", "[\"ab\"]", "[\"a\",\"b\",A]", "[\xC3\xA9]"}) {
    EXPECT_TRUE(GrammarMatcher::Matches(g, ok)) << ok;
  }
  for (const char* bad : {"[", "[,]", "[\"\"]", "[\"a\",]", "[B]"}) {
    EXPECT_FALSE(GrammarMatcher::Matches(g, bad)) << bad;
  }
}

// Classes work on code points, matched as their UTF-8 bytes: a negated class
// takes any character (of any length) but the listed ones, and never a
// broken sequence.
TEST(GrammarTest, CharacterClassesAreUnicode) {
  const Grammar g = Parse(R"(root ::= [^"\\]* | "x" . "x")");
  for (const char* ok :
       {"", "abc", "h\xC3\xA9llo", "\xE2\x82\xAC", "\xF0\x9F\xA6\x99", "x\xF0\x9F\xA6\x99x"}) {
    EXPECT_TRUE(GrammarMatcher::Matches(g, ok)) << ok;
  }
  for (const char* bad : {"a\"", "\\", "\xC3", "\xED\xA0\x80", "\xFF", "x\xC3x"}) {
    EXPECT_FALSE(GrammarMatcher::Matches(g, bad)) << bad;
  }
  const Grammar greek = Parse("root ::= [α-ω]+");
  EXPECT_TRUE(GrammarMatcher::Matches(greek, "λόγος") == false);  // ό is outside α-ω
  EXPECT_TRUE(GrammarMatcher::Matches(greek, "λγ"));
}

TEST(GrammarTest, ErrorsNameWhatIsWrongAndWhere) {
  EXPECT_EQ(ParseError("root ::= foo"), "grammar: rule \"foo\" is used but not defined");
  EXPECT_EQ(ParseError("start ::= \"a\""), "grammar: no \"root\" rule to start from");
  EXPECT_EQ(ParseError("root ::= \"a"), "grammar: line 1, column 12: unterminated string literal");
  EXPECT_EQ(ParseError("root ::= [b-a]"),
            "grammar: line 1, column 14: character range is backwards");
  EXPECT_EQ(ParseError("root ::= (\"a\""), "grammar: line 1, column 14: expected )");
  EXPECT_EQ(ParseError("root ::= \"a\"{3,1}"), "grammar: line 1, column 17: bad repetition bound");
  EXPECT_EQ(ParseError("root ::= x\nx ::= x \"a\" | \"b\""),
            "grammar: rule \"x\" is left-recursive (it can start with itself, directly or by "
            "repeating something that can match nothing, as in (\"a\"?)*); rewrite it with "
            "repetition of something that is never empty, e.g. x ::= y (\",\" y)*");
  EXPECT_EQ(ParseError("root ::= \"a\"\nroot ::= \"b\""),
            "grammar: line 2, column 9: rule \"root\" is defined twice");
}

TEST(GrammarTest, MatcherAcceptsTokenByTokenAndRefusesWithoutChange) {
  auto g = std::make_shared<Grammar>(Parse(R"(root ::= "{" [a-z]* "}")"));
  GrammarMatcher m(g);
  EXPECT_FALSE(m.accepting());
  EXPECT_TRUE(m.Accept("{ab"));
  EXPECT_FALSE(m.Accept("c{"));  // refused: the state stays after "{ab"
  EXPECT_TRUE(m.Accept("c}"));
  EXPECT_TRUE(m.accepting());
  EXPECT_TRUE(m.complete());
  EXPECT_FALSE(m.CanAccept("x"));
}

TEST(GrammarTest, MaskAllowsExactlyTheTokensThatFit) {
  // ids:              0     1     2      3      4     5    6 (end)
  TokenVocabulary vocab({"{", "{a", "ab", "b}", "}", "", "<eos>"}, {6});
  const Grammar g = Parse(R"(root ::= "{" [ab]* "}")");
  Stacks start = GrammarMatcher::Start(g);
  TokenMask mask = ComputeMask(g, vocab, start);
  std::vector<int32_t> allowed;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (MaskAllows(mask, id)) allowed.push_back(id);
  }
  EXPECT_EQ(allowed, (std::vector<int32_t>{0, 1}));
  GrammarMatcher m(std::make_shared<Grammar>(g));
  ASSERT_TRUE(m.Accept("{a"));
  mask = ComputeMask(g, vocab, m.stacks());
  allowed.clear();
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (MaskAllows(mask, id)) allowed.push_back(id);
  }
  EXPECT_EQ(allowed, (std::vector<int32_t>{2, 3, 4}));
  ASSERT_TRUE(m.Accept("}"));
  mask = ComputeMask(g, vocab, m.stacks());
  allowed.clear();
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (MaskAllows(mask, id)) allowed.push_back(id);
  }
  EXPECT_EQ(allowed, (std::vector<int32_t>{6}));  // only the end
}

TEST(GrammarTest, MaskCacheHitsOnARevisitedState) {
  TokenVocabulary vocab({"a", "b", "\"", "x"}, {});
  const Grammar g = Parse(R"(root ::= "\"" [ab]* "\"")");
  MaskCache cache;
  GrammarMatcher m(std::make_shared<Grammar>(g));
  ASSERT_TRUE(m.Accept("\""));
  auto first = cache.Get(g, vocab, m.stacks());
  ASSERT_TRUE(m.Accept("a"));
  auto second = cache.Get(g, vocab, m.stacks());
  EXPECT_EQ(first, second);  // inside the string the state repeats
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(cache.misses(), 1u);
}

}  // namespace
}  // namespace kvmesh::grammar
