// The Jinja engine's syntax tree and parser. Internal to the engine.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/jinja/value.h"
#include "common/status.h"

namespace kvmesh::jinja::internal {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    kLiteral,  // value
    kName,     // name
    kAttr,     // a.name
    kItem,     // a[b]
    kSlice,    // a[b:c:d] (args may be null)
    kCall,     // a(args, named)
    kFilter,   // a | name(args, named); a is null inside {% filter %}
    kUnknown,  // a filter or test unknown at parse time, inside an if: fails when reached
    kTest,     // a is [not] name(args)
    kNeg,      // -a
    kPos,      // +a
    kNot,      // not a
    kBinary,   // a op b: + - * / // % ** ~
    kAnd,      // a and b
    kOr,       // a or b
    kCompare,  // a op b op c ...: == != < > <= >= in, not in
    kCond,     // b if a else c  (args: [cond, then, else-or-null])
    kList,     // [args]
    kTuple,    // (args)
    kDict,     // {args[0]: args[1], ...}
  };
  Kind kind;
  int line = 0;
  Value value;                // kLiteral
  std::string name;           // kName, kAttr, kFilter, kTest; kBinary's operator
  bool negated = false;       // kTest
  std::vector<ExprPtr> args;  // operands
  std::vector<std::pair<std::string, ExprPtr>> named;  // keyword arguments
  std::vector<std::string> ops;                        // kCompare's operators
};

struct Stmt;
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

struct Stmt {
  enum class Kind {
    kText,       // text
    kOutput,     // {{ expr }}
    kIf,         // conditions[i] → bodies[i]; bodies.back() is else when longer
    kFor,        // targets in expr [if cond]: body; else_body
    kSet,        // targets (or ns.attr via attr) = expr
    kSetBlock,   // {% set name %}body{% endset %}, with filter
    kMacro,      // name(params = defaults): body
    kCallBlock,  // {% call(params) expr %}body
    kFilterBlock,
    kBreak,
    kContinue,
    kScope,  // {% generation %}: body
  };
  Kind kind;
  int line = 0;
  std::string text;
  ExprPtr expr;                     // output, for iterable, set value, call, filter
  ExprPtr cond;                     // for's filter
  std::vector<ExprPtr> conditions;  // if/elif
  std::vector<Body> bodies;         // if branches (+ else)
  Body body, else_body;
  std::vector<std::string> targets;  // for/set names; set ns.attr: {ns, attr} with attr_set
  bool attr_set = false;
  bool recursive = false;
  std::string name;                 // macro
  std::vector<std::string> params;  // macro / call block
  std::vector<ExprPtr> defaults;    // per param (null: none)
};

// Parses a template. Errors name the line.
StatusOr<std::shared_ptr<Body>> ParseTemplate(std::string_view source);

}  // namespace kvmesh::jinja::internal
