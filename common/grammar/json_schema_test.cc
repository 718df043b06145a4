#include "common/grammar/json_schema.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "common/grammar/grammar_matcher.h"

namespace kvmesh::grammar {
namespace {

using nlohmann::json;

Grammar FromSchema(const char* schema) {
  auto gbnf = JsonSchemaToGbnf(json::parse(schema));
  EXPECT_TRUE(gbnf.ok()) << gbnf.status().ToString();
  auto g = Grammar::ParseGbnf(gbnf.ok() ? *gbnf : "root ::= \"\"");
  EXPECT_TRUE(g.ok()) << g.status().ToString() << "\n" << (gbnf.ok() ? *gbnf : "");
  return std::move(g).value();
}

std::string SchemaError(const char* schema) {
  auto gbnf = JsonSchemaToGbnf(json::parse(schema));
  EXPECT_FALSE(gbnf.ok()) << schema;
  return gbnf.ok() ? "" : gbnf.status().message();
}

TEST(JsonSchemaTest, ObjectsWithRequiredAndOptionalProperties) {
  const Grammar g = FromSchema(R"({"type": "object", "properties": {
      "name": {"type": "string"}, "age": {"type": "integer", "minimum": 0},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
      "required": ["name"]})");
  for (const char* ok : {R"({"name":"x"})", R"({ "name": "x", "age": 3 })",
                         R"({"name":"x","age":0,"tags":["a","b"]})", R"({"name":"é","tags":[]})"}) {
    EXPECT_TRUE(GrammarMatcher::Matches(g, ok)) << ok;
  }
  for (const char* bad :
       {R"({})", R"({"age":3})", R"({"name":"x","age":-1})", R"({"name":"x","tags":["a","b","a"]})",
        R"({"name":"x","tags":["c"]})", R"({"name":"x",})", R"({"name":"x"}  )"}) {
    EXPECT_FALSE(GrammarMatcher::Matches(g, bad)) << bad;
  }
}

TEST(JsonSchemaTest, OnlyOptionalPropertiesNeedNoLeadingComma) {
  const Grammar g = FromSchema(R"({"properties": {"a": {"type": "integer"},
                                                  "b": {"type": "boolean"}}})");
  for (const char* ok : {"{}", R"({"a":1})", R"({"b":true})", R"({"a":1,"b":false})"}) {
    EXPECT_TRUE(GrammarMatcher::Matches(g, ok)) << ok;
  }
  for (const char* bad : {R"({,"b":true})", R"({"b":true,"a":1})"}) {
    EXPECT_FALSE(GrammarMatcher::Matches(g, bad)) << bad;
  }
}

TEST(JsonSchemaTest, RefsAnyOfConstFormatsAndPatterns) {
  const Grammar g = FromSchema(R"({"$defs": {"node": {"type": "object", "properties": {
      "v": {"anyOf": [{"type": "null"}, {"const": 7}]},
      "next": {"$ref": "#/$defs/node"}}, "required": ["v"]}},
      "type": "array", "items": {"$ref": "#/$defs/node"}, "minItems": 1})");
  EXPECT_TRUE(GrammarMatcher::Matches(g, R"([{"v":null},{"v":7,"next":{"v":null}}])"));
  EXPECT_FALSE(GrammarMatcher::Matches(g, R"([])"));
  EXPECT_FALSE(GrammarMatcher::Matches(g, R"([{"v":8}])"));
  const Grammar date = FromSchema(R"({"type": "string", "format": "date"})");
  EXPECT_TRUE(GrammarMatcher::Matches(date, R"("2026-12-01")"));
  EXPECT_FALSE(GrammarMatcher::Matches(date, R"("2026-13-01")"));
  const Grammar pattern = FromSchema(R"({"type": "string", "pattern": "^[A-Z]{2}-\\d+$"})");
  EXPECT_TRUE(GrammarMatcher::Matches(pattern, R"("AB-12")"));
  EXPECT_FALSE(GrammarMatcher::Matches(pattern, R"("ab-12")"));
  const Grammar quote = FromSchema(R"({"type": "string", "pattern": "^a\"b$"})");
  EXPECT_TRUE(GrammarMatcher::Matches(quote, R"("a\"b")"));  // escaped, as JSON must
  const Grammar range = FromSchema(R"({"type": "integer", "minimum": -2, "exclusiveMaximum": 3})");
  for (const char* ok : {"-2", "-1", "0", "2"})
    EXPECT_TRUE(GrammarMatcher::Matches(range, ok)) << ok;
  for (const char* bad : {"-3", "3", "02"})
    EXPECT_FALSE(GrammarMatcher::Matches(range, bad)) << bad;
}

TEST(JsonSchemaTest, UnsupportedKeywordsNameThemselvesAndTheirPlace) {
  EXPECT_EQ(SchemaError(R"({"type": "object", "properties": {"a": {"not": {}}}})"),
            "JSON schema at #/properties/a: keyword \"not\" is not supported");
  EXPECT_EQ(SchemaError(R"({"type": "number", "minimum": 1})"),
            "JSON schema at #: keyword \"minimum\" is supported for integers only");
  EXPECT_EQ(SchemaError(R"({"$ref": "http://example.com/s.json"})"),
            "JSON schema at #/$ref: \"http://example.com/s.json\" is not a local definition (#, "
            "#/$defs/NAME or #/definitions/NAME)");
  EXPECT_EQ(SchemaError(R"({"type": "string", "format": "email"})"),
            "JSON schema at #/format: format \"email\" is not supported (date, time, "
            "date-time, uuid, ipv4)");
  EXPECT_EQ(SchemaError(R"(false)"), "JSON schema at #: the schema false accepts nothing");
  EXPECT_EQ(SchemaError(R"({"type": "string", "pattern": "(a"})"),
            "JSON schema at #/pattern: pattern \"(a\": missing ) (at offset 2)");
}

TEST(RegexTest, WholeTextAndUnanchoredEnds) {
  auto anchored = Grammar::ParseGbnf(*RegexToGbnf("^(ab|c)+[0-9]?$"));
  ASSERT_TRUE(anchored.ok()) << anchored.status().ToString();
  for (const char* ok : {"ab", "cab", "abc5"})
    EXPECT_TRUE(GrammarMatcher::Matches(*anchored, ok)) << ok;
  for (const char* bad : {"", "a", "ab55", "xab"}) {
    EXPECT_FALSE(GrammarMatcher::Matches(*anchored, bad)) << bad;
  }
  auto loose = Grammar::ParseGbnf(*RegexToGbnf("\\d{3}"));
  ASSERT_TRUE(loose.ok());
  EXPECT_TRUE(GrammarMatcher::Matches(*loose, "call 555 now"));
  EXPECT_FALSE(GrammarMatcher::Matches(*loose, "call 55 now"));
  EXPECT_FALSE(RegexToGbnf("(?=a)").ok());
  EXPECT_FALSE(RegexToGbnf("a**").ok());
  EXPECT_FALSE(RegexToGbnf("\\1").ok());
  EXPECT_EQ(RegexToGbnf("^(a*)*$").status().message(),
            "pattern \"^(a*)*$\": repeats something that can match nothing (as in (a*)*), which is "
            "not supported");
}

// Soundness against the JSON Schema test suite (Debian's
// json-schema-test-suite, draft 7): for every schema the converter accepts,
// every test instance the grammar matches must be one the suite calls valid.
TEST(JsonSchemaTest, EveryInstanceTheGrammarMatchesIsValidInTheTestSuite) {
  const std::filesystem::path dir = "/usr/share/json-schema-test-suite/tests/draft7";
  if (!std::filesystem::is_directory(dir)) {
    GTEST_SKIP() << "the json-schema-test-suite package is not installed (" << dir << ")";
  }
  int schemas = 0, converted = 0, matched = 0, checked = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    const json groups = json::parse(in);
    for (const json& group : groups) {
      ++schemas;
      auto gbnf = JsonSchemaToGbnf(group["schema"]);
      if (!gbnf.ok()) continue;
      auto g = Grammar::ParseGbnf(*gbnf);
      ASSERT_TRUE(g.ok()) << g.status().ToString();
      ++converted;
      for (const json& test : group["tests"]) {
        ++checked;
        if (!GrammarMatcher::Matches(*g, test["data"].dump())) continue;
        ++matched;
        EXPECT_TRUE(test["valid"].get<bool>())
            << entry.path().filename() << ": " << group["description"] << " / "
            << test["description"] << ": the grammar matches " << test["data"].dump()
            << ", which the suite calls invalid";
      }
    }
  }
  std::printf(
      "json-schema-test-suite draft7: %d schemas, %d converted, %d of %d instances "
      "matched (all valid)\n",
      schemas, converted, matched, checked);
  EXPECT_GE(converted, 60);  // 63 at this writing: the rest use keywords refused with a 400
}

}  // namespace
}  // namespace kvmesh::grammar
