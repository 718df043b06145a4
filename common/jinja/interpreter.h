// The Jinja engine's interpreter (common/jinja/jinja.h): the scopes, limits
// and evaluation of statements and expressions (render.cc), the filters and tests
// (filters.cc) and str/list/dict methods (methods.cc). Internal to the engine.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "common/jinja/jinja.h"
#include "common/jinja/parse.h"

namespace kvmesh::jinja::internal {

// Raises the RenderError a template sees.
[[noreturn]] void Throw(const std::string& what);

// Control flow out of a loop body.
struct BreakSignal {};
struct ContinueSignal {};

struct Frame {
  std::unordered_map<std::string, Value> vars;
};

struct Interpreter {
  const RenderOptions& options;
  std::vector<Frame> frames;  // frames[0]: globals and the render's variables
  int64_t steps = 0;
  int depth = 0;
  std::string* out = nullptr;

  explicit Interpreter(const RenderOptions& o) : options(o) {}

  void Step();

  struct DepthGuard {
    Interpreter& in;
    explicit DepthGuard(Interpreter& i) : in(i) {
      if (++in.depth > in.options.limits.max_depth) {
        Throw("template nested deeper than " + std::to_string(in.options.limits.max_depth));
      }
    }
    ~DepthGuard() { --in.depth; }
  };

  void Write(const std::string& s);

  Value Lookup(const std::string& name) const;
  void Assign(const std::string& name, Value v);

  // --- statements ---
  void Run(const Body& body);

  std::string Capture(const Body& body);

  void Exec(const Stmt& s);

  // {% set %}: a name, a tuple of names, or a namespace attribute.

  void SetTargets(const Stmt& s, Value v);

  // One name, or a tuple unpacked (for targets, set a, b = ...).

  void Bind(const std::vector<std::string>& targets, Value v);

  void Unpack(const std::vector<std::string>& targets, const Value& v);

  std::vector<Value> Iterate(const Value& v);

  void ExecFor(const Stmt& s, const Value& iterable, int depth_level);

  Value MakeMacro(const Stmt& s, const std::string& name_override = "");

  // --- expressions ---
  Value Eval(const Expr& e);

  Args EvalArgs(const Expr& e, size_t first);

  Value ApplyFilterChain(const Expr& chain, Value v);

  Value Call(const Value& callee, Args& args);

  static std::string UndefinedMessage(const Value& v);

  Value GetAttr(const Value& obj, const std::string& name);

  Value GetItem(const Value& obj, const Value& key);

  Value Slice(const Value& obj, const Value& a, const Value& b, const Value& c);

  Value BinaryOp(const std::string& op, const Value& a, const Value& b);

  std::string PercentFormat(const std::string& fmt, const Value& arg);

  bool Contains(const Value& container, const Value& item);

  bool CompareOp(const std::string& op, const Value& a, const Value& b);

  // --- methods of str, list and dict ---
  Value BoundMethod(const Value& self, const std::string& name);

  Value CallMethod(const Value& self, const std::string& name, Args& a);

  std::string Format(const std::string& fmt, const Args& a);

  // --- filters and tests ---
  Value ApplyFilter(const std::string& name, const Value& v, Args& a);
  bool ApplyTest(const std::string& name, const Value& v, Args& a);
  Value MapOrSelect(const std::string& name, const Value& v, Args& a);
};

// Helpers both files use.
extern const std::string kWhitespace;
std::string Strip(const std::string& s, const std::string& chars, bool left, bool right);
std::string Lower(std::string s);
std::string Upper(std::string s);
std::vector<std::string> SplitWs(const std::string& s, int64_t maxsplit);
// Python's str.replace (count < 0: all).
std::string Replace(const std::string& s, const std::string& from, const std::string& to,
                    int64_t count);
int64_t ToInt(const Value& v, const char* what);
bool IsMethodName(Value::Kind k, const std::string& name);
std::string HtmlEscape(const std::string& s);
bool IsKnownFilter(std::string_view name);
bool IsKnownTest(std::string_view name);
Value NamespaceFn(Interpreter&, Args& a);

}  // namespace kvmesh::jinja::internal
