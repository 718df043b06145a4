// The Jinja engine's lexer: a template's text as segments of text, {{ }} and
// {% %} tags (comments dropped), with trim_blocks, lstrip_blocks and the
// -/+ whitespace controls applied, and each tag's expression tokens.
// Internal to the engine.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace kvmesh::jinja::internal {

struct ParseError : std::runtime_error {
  ParseError(int line, const std::string& what)
      : std::runtime_error("line " + std::to_string(line) + ": " + what) {}
};

struct Token {
  enum class Type { kName, kString, kInt, kFloat, kOp, kEnd };
  Type type = Type::kEnd;
  std::string text;
  int64_t i = 0;
  double f = 0;
  int line = 0;
};

struct Segment {
  enum class Kind { kText, kVar, kBlock };
  Kind kind;
  std::string text;
  std::vector<Token> tokens;  // ends with kEnd
  int line = 0;
};

// The segments of `source`; throws ParseError naming the line.
std::vector<Segment> Lex(std::string_view source);

}  // namespace kvmesh::jinja::internal
