// libFuzzer target: the constrained-decoding front ends on arbitrary input.
// The input is tried as GBNF text, as a regular expression and (when it is
// JSON) as a JSON Schema; whatever a converter accepts must come out as GBNF
// that parses, and matching never crashes, hangs or runs out of memory.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "common/grammar/grammar.h"
#include "common/grammar/grammar_matcher.h"
#include "common/grammar/json_schema.h"

namespace {

using kvmesh::grammar::Grammar;
using kvmesh::grammar::GrammarMatcher;

void Exercise(const Grammar& g, std::string_view input) {
  GrammarMatcher::Matches(g, input.substr(0, 256));
  GrammarMatcher::Matches(g, "{\"a\": [1, true, null, \"x\"]}");
  GrammarMatcher::Matches(g, "");
}

void MustParse(const std::string& gbnf, const char* from) {
  auto g = Grammar::ParseGbnf(gbnf);
  if (!g.ok()) {
    std::fprintf(stderr, "%s produced GBNF that does not parse: %s\n%s\n", from,
                 g.status().message().c_str(), gbnf.c_str());
    std::abort();
  }
  Exercise(*g, gbnf);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  if (auto g = Grammar::ParseGbnf(input); g.ok()) Exercise(*g, input);
  if (auto regex = kvmesh::grammar::RegexToGbnf(input); regex.ok()) MustParse(*regex, "regex");
  const auto schema = nlohmann::json::parse(input, nullptr, /*allow_exceptions=*/false);
  if (!schema.is_discarded()) {
    if (auto gbnf = kvmesh::grammar::JsonSchemaToGbnf(schema); gbnf.ok())
      MustParse(*gbnf, "schema");
  }
  return 0;
}
