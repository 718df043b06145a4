// The Jinja engine's interpreter, with the filters, tests and methods of
// str, list and dict that templates use, following Python and Jinja2 3.1.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <unordered_map>

#include "common/jinja/jinja.h"
#include "common/jinja/parse.h"

namespace kvmesh::jinja {
namespace internal {

struct Node {
  std::shared_ptr<Body> body;
};

namespace {

using Kind = Value::Kind;

[[noreturn]] void Throw(const std::string& what) { throw RenderError(what); }

// Control flow out of a loop body.
struct BreakSignal {};
struct ContinueSignal {};

const std::string kWhitespace = " \t\n\r\v\f\x1c\x1d\x1e\x1f";

std::string Strip(const std::string& s, const std::string& chars, bool left, bool right) {
  size_t b = 0, e = s.size();
  if (left) {
    while (b < e && chars.find(s[b]) != std::string::npos) ++b;
  }
  if (right) {
    while (e > b && chars.find(s[e - 1]) != std::string::npos) --e;
  }
  return s.substr(b, e - b);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

std::vector<std::string> SplitWs(const std::string& s, int64_t maxsplit) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && kWhitespace.find(s[i]) != std::string::npos) ++i;
    if (i >= s.size()) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
      out.push_back(Strip(s.substr(i), kWhitespace, false, true));
      return out;
    }
    size_t j = i;
    while (j < s.size() && kWhitespace.find(s[j]) == std::string::npos) ++j;
    out.push_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

std::vector<std::string> SplitSep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (sep.empty()) Throw("ValueError: empty separator");
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) break;
    const size_t k = s.find(sep, start);
    if (k == std::string::npos) break;
    out.push_back(s.substr(start, k - start));
    start = k + sep.size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::string Replace(const std::string& s, const std::string& from, const std::string& to,
                    int64_t count) {
  if (from.empty()) {
    // Python inserts `to` between every character.
    std::string out;
    int64_t n = 0;
    const std::vector<std::string> cps = CodePoints(s);
    for (size_t i = 0; i <= cps.size(); ++i) {
      if (count < 0 || n < count) {
        out += to;
        ++n;
      }
      if (i < cps.size()) out += cps[i];
    }
    return out;
  }
  std::string out;
  size_t start = 0;
  int64_t n = 0;
  while (count < 0 || n < count) {
    const size_t k = s.find(from, start);
    if (k == std::string::npos) break;
    out += s.substr(start, k - start) + to;
    start = k + from.size();
    ++n;
  }
  return out + s.substr(start);
}

Value StrList(const std::vector<std::string>& parts) {
  Value v = Value::MakeList();
  for (const std::string& p : parts) v.list->push_back(Value::Str(p));
  return v;
}

int64_t ToInt(const Value& v, const char* what) {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  if (v.kind == Kind::kFloat) return static_cast<int64_t>(v.f);
  Throw(std::string("TypeError: ") + what + " must be an integer, not " + TypeName(v));
}

// Python's index normalisation; false if out of range.
bool NormIndex(int64_t* i, int64_t n) {
  if (*i < 0) *i += n;
  return *i >= 0 && *i < n;
}

// Python's slice indices for length n.
std::vector<int64_t> SliceIndices(int64_t n, const Value& a, const Value& b, const Value& c) {
  const int64_t step = c.is_none() || c.is_undefined() ? 1 : ToInt(c, "slice step");
  if (step == 0) Throw("ValueError: slice step cannot be zero");
  auto clamp = [&](const Value& v, int64_t def) {
    if (v.is_none() || v.is_undefined()) return def;
    int64_t x = ToInt(v, "slice index");
    if (x < 0) x += n;
    if (step > 0) return std::clamp<int64_t>(x, 0, n);
    return std::clamp<int64_t>(x, -1, n - 1);
  };
  const int64_t start = clamp(a, step > 0 ? 0 : n - 1);
  const int64_t stop = clamp(b, step > 0 ? n : -1);
  std::vector<int64_t> out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) out.push_back(i);
  return out;
}

bool IsMethodName(Kind k, const std::string& name);
std::string HtmlEscape(const std::string& s);

}  // namespace

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

  void Step() {
    if (++steps > options.limits.max_steps) {
      Throw("template exceeded its limit of " + std::to_string(options.limits.max_steps) +
            " steps");
    }
  }

  struct DepthGuard {
    Interpreter& in;
    explicit DepthGuard(Interpreter& i) : in(i) {
      if (++in.depth > in.options.limits.max_depth) {
        Throw("template nested deeper than " + std::to_string(in.options.limits.max_depth));
      }
    }
    ~DepthGuard() { --in.depth; }
  };

  void Write(const std::string& s) {
    out->append(s);
    if (out->size() > options.limits.max_output_bytes) {
      Throw("template output exceeded " + std::to_string(options.limits.max_output_bytes) +
            " bytes");
    }
  }

  Value Lookup(const std::string& name) const {
    for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
      auto f = it->vars.find(name);
      if (f != it->vars.end()) return f->second;
    }
    return Value::Undefined("'" + name + "' is undefined");
  }
  void Assign(const std::string& name, Value v) { frames.back().vars[name] = std::move(v); }

  // --- statements ---
  void Run(const Body& body) {
    for (const StmtPtr& s : body) Exec(*s);
  }

  std::string Capture(const Body& body) {
    std::string buffer;
    std::string* saved = out;
    out = &buffer;
    try {
      Run(body);
    } catch (...) {
      out = saved;
      throw;
    }
    out = saved;
    return buffer;
  }

  void Exec(const Stmt& s) {
    Step();
    switch (s.kind) {
      case Stmt::Kind::kText:
        Write(s.text);
        return;
      case Stmt::Kind::kOutput:
        Write(ToStr(Eval(*s.expr)));
        return;
      case Stmt::Kind::kIf:
        for (size_t i = 0; i < s.conditions.size(); ++i) {
          if (Truthy(Eval(*s.conditions[i]))) {
            Run(s.bodies[i]);
            return;
          }
        }
        if (s.bodies.size() > s.conditions.size()) Run(s.bodies.back());
        return;
      case Stmt::Kind::kFor:
        ExecFor(s, Eval(*s.expr), 0);
        return;
      case Stmt::Kind::kSet: {
        Value v = Eval(*s.expr);
        if (s.attr_set) {
          Value ns = Lookup(s.targets[0]);
          if (!ns.is_dict() || !ns.dict->is_namespace) {
            Throw("TemplateRuntimeError: cannot assign attribute on non-namespace object");
          }
          ns.dict->Set(Value::Str(s.targets[1]), std::move(v));
        } else if (s.targets.size() == 1) {
          Assign(s.targets[0], std::move(v));
        } else {
          Unpack(s.targets, v);
        }
        return;
      }
      case Stmt::Kind::kSetBlock: {
        Value v = Value::Str(Capture(s.body));
        if (s.expr) v = ApplyFilterChain(*s.expr, v);
        if (s.attr_set) {
          Value ns = Lookup(s.targets[0]);
          if (!ns.is_dict() || !ns.dict->is_namespace) {
            Throw("TemplateRuntimeError: cannot assign attribute on non-namespace object");
          }
          ns.dict->Set(Value::Str(s.targets[1]), std::move(v));
        } else {
          Assign(s.targets[0], std::move(v));
        }
        return;
      }
      case Stmt::Kind::kMacro:
        Assign(s.name, MakeMacro(s));
        return;
      case Stmt::Kind::kCallBlock: {
        // caller(): the block's body as a macro, passed to the call.
        Value caller = MakeMacro(s, "caller");
        frames.emplace_back();
        frames.back().vars["caller"] = caller;
        Value result;
        try {
          result = Eval(*s.expr);
        } catch (...) {
          frames.pop_back();
          throw;
        }
        frames.pop_back();
        Write(ToStr(result));
        return;
      }
      case Stmt::Kind::kFilterBlock:
        Write(ToStr(ApplyFilterChain(*s.expr, Value::Str(Capture(s.body)))));
        return;
      case Stmt::Kind::kBreak:
        throw BreakSignal{};
      case Stmt::Kind::kContinue:
        throw ContinueSignal{};
      case Stmt::Kind::kScope:
        frames.emplace_back();
        try {
          Run(s.body);
        } catch (...) {
          frames.pop_back();
          throw;
        }
        frames.pop_back();
        return;
    }
  }

  void Unpack(const std::vector<std::string>& targets, const Value& v) {
    const std::vector<Value> items = Iterate(v);
    if (items.size() != targets.size()) {
      Throw("ValueError: expected " + std::to_string(targets.size()) + " values to unpack, got " +
            std::to_string(items.size()));
    }
    for (size_t i = 0; i < targets.size(); ++i) Assign(targets[i], items[i]);
  }

  std::vector<Value> Iterate(const Value& v) {
    switch (v.kind) {
      case Kind::kUndefined:
        return {};
      case Kind::kList:
        return *v.list;
      case Kind::kDict: {
        std::vector<Value> keys;
        for (const auto& kv : v.dict->items) keys.push_back(kv.first);
        return keys;
      }
      case Kind::kString: {
        std::vector<Value> out;
        for (std::string& c : CodePoints(v.s)) out.push_back(Value::Str(std::move(c)));
        return out;
      }
      default:
        Throw("TypeError: '" + TypeName(v) + "' object is not iterable");
    }
  }

  void ExecFor(const Stmt& s, const Value& iterable, int depth_level) {
    std::vector<Value> items = Iterate(iterable);
    if (s.cond) {
      // The filter runs with the loop variable bound, before loop.* exists.
      std::vector<Value> kept;
      frames.emplace_back();
      for (const Value& item : items) {
        if (s.targets.size() == 1) {
          Assign(s.targets[0], item);
        } else {
          Unpack(s.targets, item);
        }
        if (Truthy(Eval(*s.cond))) kept.push_back(item);
      }
      frames.pop_back();
      items = std::move(kept);
    }
    if (items.empty()) {
      Run(s.else_body);
      return;
    }
    const int64_t n = static_cast<int64_t>(items.size());
    frames.emplace_back();
    Value loop = Value::MakeDict();
    auto set = [&](const char* k, Value v) { loop.dict->Set(Value::Str(k), std::move(v)); };
    Value cycle_items = Value::MakeList();
    set("length", Value::Int(n));
    set("depth", Value::Int(depth_level + 1));
    set("depth0", Value::Int(depth_level));
    try {
      for (int64_t i = 0; i < n; ++i) {
        Step();
        set("index", Value::Int(i + 1));
        set("index0", Value::Int(i));
        set("revindex", Value::Int(n - i));
        set("revindex0", Value::Int(n - i - 1));
        set("first", Value::Bool(i == 0));
        set("last", Value::Bool(i == n - 1));
        set("previtem", i > 0 ? items[i - 1] : Value::Undefined("there is no previous item"));
        set("nextitem", i + 1 < n ? items[i + 1] : Value::Undefined("there is no next item"));
        const int64_t index = i;
        set("cycle", Value::Fn("cycle", [index](Interpreter&, Args& a) {
              if (a.positional.empty()) Throw("TypeError: no items for cycling given");
              return a.positional[index % static_cast<int64_t>(a.positional.size())];
            }));
        if (s.recursive) {
          const Stmt* stmt = &s;
          set("__call__", Value::Fn("loop", [this, stmt, depth_level](Interpreter&, Args& a) {
                if (a.positional.size() != 1) Throw("TypeError: loop() takes one argument");
                std::string buffer;
                std::string* saved = out;
                out = &buffer;
                ExecFor(*stmt, a.positional[0], depth_level + 1);
                out = saved;
                return Value::Str(buffer);
              }));
        }
        frames.back().vars["loop"] = loop;
        if (s.targets.size() == 1) {
          Assign(s.targets[0], items[i]);
        } else {
          Unpack(s.targets, items[i]);
        }
        try {
          Run(s.body);
        } catch (const ContinueSignal&) {
        }
      }
    } catch (const BreakSignal&) {
    } catch (...) {
      frames.pop_back();
      throw;
    }
    frames.pop_back();
  }

  Value MakeMacro(const Stmt& s, const std::string& name_override = "") {
    const Stmt* stmt = &s;
    const std::string name = name_override.empty() ? s.name : name_override;
    return Value::Fn(name, [stmt, name](Interpreter& in, Args& args) {
      DepthGuard guard(in);
      // A macro sees the template's top-level names, not its caller's locals.
      std::vector<Frame> saved;
      saved.swap(in.frames);
      const size_t visible = name == "caller" ? saved.size() : std::min<size_t>(2, saved.size());
      for (size_t i = 0; i < visible; ++i) in.frames.push_back(saved[i]);
      in.frames.emplace_back();
      try {
        size_t used_named = 0;
        Value varargs = Value::MakeList({}, true);
        for (size_t p = 0; p < stmt->params.size(); ++p) {
          const Value* v = nullptr;
          if (p < args.positional.size()) {
            v = &args.positional[p];
          } else {
            for (const auto& [k, val] : args.named) {
              if (k == stmt->params[p]) {
                v = &val;
                ++used_named;
              }
            }
          }
          if (v != nullptr) {
            in.Assign(stmt->params[p], *v);
          } else if (stmt->defaults[p]) {
            in.Assign(stmt->params[p], in.Eval(*stmt->defaults[p]));
          } else {
            in.Assign(stmt->params[p],
                      Value::Undefined("parameter '" + stmt->params[p] + "' was not provided"));
          }
        }
        for (size_t p = stmt->params.size(); p < args.positional.size(); ++p) {
          varargs.list->push_back(args.positional[p]);
        }
        Value kwargs = Value::MakeDict();
        for (const auto& [k, val] : args.named) {
          if (std::find(stmt->params.begin(), stmt->params.end(), k) == stmt->params.end()) {
            kwargs.dict->Set(Value::Str(k), val);
          }
        }
        (void)used_named;
        in.Assign("varargs", varargs);
        in.Assign("kwargs", kwargs);
        std::string text = in.Capture(stmt->body);
        in.frames.swap(saved);
        return Value::Str(std::move(text));
      } catch (...) {
        in.frames.swap(saved);
        throw;
      }
    });
  }

  // --- expressions ---
  Value Eval(const Expr& e) {
    Step();
    DepthGuard guard(*this);
    switch (e.kind) {
      case Expr::Kind::kLiteral:
        return e.value;
      case Expr::Kind::kName:
        return Lookup(e.name);
      case Expr::Kind::kAttr:
        return GetAttr(Eval(*e.args[0]), e.name);
      case Expr::Kind::kItem:
        return GetItem(Eval(*e.args[0]), Eval(*e.args[1]));
      case Expr::Kind::kSlice: {
        const Value obj = Eval(*e.args[0]);
        Value parts[3];
        for (int i = 0; i < 3; ++i) parts[i] = e.args[i + 1] ? Eval(*e.args[i + 1]) : Value::None();
        return Slice(obj, parts[0], parts[1], parts[2]);
      }
      case Expr::Kind::kCall: {
        Value callee = Eval(*e.args[0]);
        Args args = EvalArgs(e, 1);
        return Call(callee, args);
      }
      case Expr::Kind::kFilter: {
        Value operand = e.args[0] ? Eval(*e.args[0]) : Value::Undefined();
        Args args = EvalArgs(e, 1);
        return ApplyFilter(e.name, operand, args);
      }
      case Expr::Kind::kUnknown:
        Throw("TemplateRuntimeError: " + e.name);
      case Expr::Kind::kTest: {
        Value operand = Eval(*e.args[0]);
        Args args = EvalArgs(e, 1);
        const bool r = ApplyTest(e.name, operand, args);
        return Value::Bool(e.negated ? !r : r);
      }
      case Expr::Kind::kNeg: {
        Value v = Eval(*e.args[0]);
        if (v.kind == Kind::kInt || v.kind == Kind::kBool)
          return Value::Int(-(v.kind == Kind::kBool ? v.b : v.i));
        if (v.kind == Kind::kFloat) return Value::Float(-v.f);
        Throw("TypeError: bad operand type for unary -: '" + TypeName(v) + "'");
      }
      case Expr::Kind::kPos: {
        Value v = Eval(*e.args[0]);
        if (!v.is_number()) Throw("TypeError: bad operand type for unary +: '" + TypeName(v) + "'");
        return v;
      }
      case Expr::Kind::kNot:
        return Value::Bool(!Truthy(Eval(*e.args[0])));
      case Expr::Kind::kAnd: {
        Value a = Eval(*e.args[0]);
        return Truthy(a) ? Eval(*e.args[1]) : a;
      }
      case Expr::Kind::kOr: {
        Value a = Eval(*e.args[0]);
        return Truthy(a) ? a : Eval(*e.args[1]);
      }
      case Expr::Kind::kBinary:
        return BinaryOp(e.name, Eval(*e.args[0]), Eval(*e.args[1]));
      case Expr::Kind::kCompare: {
        Value left = Eval(*e.args[0]);
        for (size_t i = 0; i < e.ops.size(); ++i) {
          Value right = Eval(*e.args[i + 1]);
          if (!CompareOp(e.ops[i], left, right)) return Value::Bool(false);
          left = std::move(right);
        }
        return Value::Bool(true);
      }
      case Expr::Kind::kCond:
        if (Truthy(Eval(*e.args[0]))) return Eval(*e.args[1]);
        return e.args[2] ? Eval(*e.args[2]) : Value::Undefined("the inline if had no else");
      case Expr::Kind::kList:
      case Expr::Kind::kTuple: {
        Value v = Value::MakeList({}, e.kind == Expr::Kind::kTuple);
        for (const ExprPtr& a : e.args) v.list->push_back(Eval(*a));
        return v;
      }
      case Expr::Kind::kDict: {
        Value v = Value::MakeDict();
        for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
          v.dict->Set(Eval(*e.args[i]), Eval(*e.args[i + 1]));
        }
        return v;
      }
    }
    return Value::Undefined();
  }

  Args EvalArgs(const Expr& e, size_t first) {
    Args a;
    for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(Eval(*e.args[i]));
    for (const auto& [k, v] : e.named) a.named.emplace_back(k, Eval(*v));
    return a;
  }

  Value ApplyFilterChain(const Expr& chain, Value v) {
    // chain is filter(filter(null, ...), ...): apply innermost first.
    std::vector<const Expr*> filters;
    for (const Expr* e = &chain; e != nullptr; e = e->args[0].get()) filters.push_back(e);
    for (auto it = filters.rbegin(); it != filters.rend(); ++it) {
      Args args = EvalArgs(**it, 1);
      v = ApplyFilter((*it)->name, v, args);
    }
    return v;
  }

  Value Call(const Value& callee, Args& args) {
    if (callee.kind == Kind::kFunction) return callee.fn->call(*this, args);
    if (callee.is_dict()) {
      if (const Value* c = callee.dict->Find(Value::Str("__call__"))) return Call(*c, args);
    }
    if (callee.is_undefined()) Throw("UndefinedError: " + UndefinedMessage(callee));
    Throw("TypeError: '" + TypeName(callee) + "' object is not callable");
  }

  static std::string UndefinedMessage(const Value& v) {
    return v.s.empty() ? "value is undefined" : v.s;
  }

  Value GetAttr(const Value& obj, const std::string& name) {
    if (obj.is_undefined()) Throw("UndefinedError: " + UndefinedMessage(obj));
    if (obj.is_dict()) {
      if (!obj.dict->is_namespace && IsMethodName(Kind::kDict, name)) return BoundMethod(obj, name);
      if (const Value* v = obj.dict->Find(Value::Str(name))) return *v;
      return Value::Undefined("'" + TypeName(obj) + " object' has no attribute '" + name + "'");
    }
    if (IsMethodName(obj.kind, name)) return BoundMethod(obj, name);
    return Value::Undefined("'" + TypeName(obj) + " object' has no attribute '" + name + "'");
  }

  Value GetItem(const Value& obj, const Value& key) {
    if (obj.is_undefined()) Throw("UndefinedError: " + UndefinedMessage(obj));
    if (obj.is_list() && obj.generator && !key.is_string()) {
      Throw("TypeError: 'generator' object is not subscriptable");
    }
    if (obj.is_list()) {
      if (key.kind != Kind::kInt && key.kind != Kind::kBool) {
        return Value::Undefined("list indices must be integers");
      }
      int64_t i = key.kind == Kind::kBool ? key.b : key.i;
      if (!NormIndex(&i, static_cast<int64_t>(obj.list->size()))) {
        return Value::Undefined("list index out of range");
      }
      return (*obj.list)[i];
    }
    if (obj.is_dict()) {
      if (const Value* v = obj.dict->Find(key)) return *v;
      if (key.is_string()) return GetAttr(obj, key.s);
      return Value::Undefined("'dict object' has no attribute " + Repr(key));
    }
    if (obj.is_string()) {
      if (key.kind != Kind::kInt) {
        if (key.is_string() && IsMethodName(Kind::kString, key.s)) return BoundMethod(obj, key.s);
        return Value::Undefined("string indices must be integers");
      }
      const std::vector<std::string> cps = CodePoints(obj.s);
      int64_t i = key.i;
      if (!NormIndex(&i, static_cast<int64_t>(cps.size()))) {
        return Value::Undefined("string index out of range");
      }
      return Value::Str(cps[i]);
    }
    if (key.is_string()) return GetAttr(obj, key.s);
    return Value::Undefined("'" + TypeName(obj) + " object' has no item " + Repr(key));
  }

  Value Slice(const Value& obj, const Value& a, const Value& b, const Value& c) {
    if (obj.is_list()) {
      Value out = Value::MakeList({}, obj.tuple);
      for (int64_t i : SliceIndices(static_cast<int64_t>(obj.list->size()), a, b, c)) {
        out.list->push_back((*obj.list)[i]);
      }
      return out;
    }
    if (obj.is_string()) {
      const std::vector<std::string> cps = CodePoints(obj.s);
      std::string out;
      for (int64_t i : SliceIndices(static_cast<int64_t>(cps.size()), a, b, c)) out += cps[i];
      return Value::Str(out);
    }
    if (obj.is_undefined()) Throw("UndefinedError: " + UndefinedMessage(obj));
    Throw("TypeError: '" + TypeName(obj) + "' object is not subscriptable");
  }

  Value BinaryOp(const std::string& op, const Value& a, const Value& b) {
    if (op == "~") return Value::Str(ToStr(a) + ToStr(b));
    if (a.is_undefined() || b.is_undefined()) {
      Throw("UndefinedError: " + UndefinedMessage(a.is_undefined() ? a : b));
    }
    if (op == "+") {
      if (a.is_string() && b.is_string()) {
        if (a.safe == b.safe) {
          Value r = Value::Str(a.s + b.s);
          r.safe = a.safe;
          return r;
        }
        // Markup + str escapes the str (and str + Markup likewise).
        Value r = Value::Str(a.safe ? a.s + HtmlEscape(b.s) : HtmlEscape(a.s) + b.s);
        r.safe = true;
        return r;
      }
      if (a.is_list() && b.is_list()) {
        Value out = Value::MakeList(*a.list, a.tuple);
        out.list->insert(out.list->end(), b.list->begin(), b.list->end());
        return out;
      }
    }
    if (op == "*") {
      if (a.is_string() && (b.kind == Kind::kInt || b.kind == Kind::kBool)) {
        std::string out;
        for (int64_t i = 0; i < ToInt(b, "count"); ++i) out += a.s;
        return Value::Str(out);
      }
      if (a.is_list() && b.kind == Kind::kInt) {
        Value out = Value::MakeList({}, a.tuple);
        for (int64_t i = 0; i < b.i; ++i)
          out.list->insert(out.list->end(), a.list->begin(), a.list->end());
        return out;
      }
    }
    if (op == "%" && a.is_string()) return Value::Str(PercentFormat(a.s, b));
    if (op == "+" && (a.is_string() || a.is_list()) && !b.is_number()) {
      const std::string t = TypeName(a);
      Throw("TypeError: can only concatenate " + t + " (not \"" + TypeName(b) + "\") to " + t);
    }
    if (!a.is_number() || !b.is_number()) {
      Throw("TypeError: unsupported operand type(s) for " + op + ": '" + TypeName(a) + "' and '" +
            TypeName(b) + "'");
    }
    const bool ints = a.kind != Kind::kFloat && b.kind != Kind::kFloat;
    const int64_t x = a.kind == Kind::kBool ? a.b : a.i, y = b.kind == Kind::kBool ? b.b : b.i;
    const double p = a.as_double(), q = b.as_double();
    if (op == "+") return ints ? Value::Int(x + y) : Value::Float(p + q);
    if (op == "-") return ints ? Value::Int(x - y) : Value::Float(p - q);
    if (op == "*") return ints ? Value::Int(x * y) : Value::Float(p * q);
    if (op == "/") {
      if (q == 0) Throw("ZeroDivisionError: division by zero");
      return Value::Float(p / q);
    }
    if (op == "//") {
      if (q == 0) Throw("ZeroDivisionError: integer division or modulo by zero");
      if (ints) {
        int64_t d = x / y;
        if ((x % y != 0) && ((x < 0) != (y < 0))) --d;
        return Value::Int(d);
      }
      return Value::Float(std::floor(p / q));
    }
    if (op == "%") {
      if (q == 0) Throw("ZeroDivisionError: integer division or modulo by zero");
      if (ints) {
        int64_t m = x % y;
        if (m != 0 && ((m < 0) != (y < 0))) m += y;
        return Value::Int(m);
      }
      double m = std::fmod(p, q);
      if (m != 0 && ((m < 0) != (q < 0))) m += q;
      return Value::Float(m);
    }
    if (op == "**") {
      if (ints && y >= 0) {
        int64_t r = 1;
        for (int64_t i = 0; i < y; ++i) r *= x;
        return Value::Int(r);
      }
      return Value::Float(std::pow(p, q));
    }
    Throw("unknown operator " + op);
  }

  std::string PercentFormat(const std::string& fmt, const Value& arg) {
    std::vector<Value> args = arg.is_list() && arg.tuple ? *arg.list : std::vector<Value>{arg};
    std::string out;
    size_t next = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
      if (fmt[i] != '%') {
        out += fmt[i];
        continue;
      }
      if (i + 1 >= fmt.size()) Throw("ValueError: incomplete format");
      const char c = fmt[++i];
      if (c == '%') {
        out += '%';
        continue;
      }
      if (next >= args.size()) Throw("TypeError: not enough arguments for format string");
      const Value& v = args[next++];
      if (c == 's') {
        out += ToStr(v);
      } else if (c == 'r') {
        out += Repr(v);
      } else if (c == 'd' || c == 'i') {
        out += std::to_string(ToInt(v, "%d format"));
      } else {
        Throw(std::string("ValueError: unsupported format character '") + c + "'");
      }
    }
    if (next < args.size())
      Throw("TypeError: not all arguments converted during string formatting");
    return out;
  }

  bool Contains(const Value& container, const Value& item) {
    if (container.is_string()) {
      if (!item.is_string()) {
        Throw("TypeError: 'in <string>' requires string as left operand, not " + TypeName(item));
      }
      return container.s.find(item.s) != std::string::npos;
    }
    if (container.is_list()) {
      for (const Value& v : *container.list) {
        if (Equal(v, item)) return true;
      }
      return false;
    }
    if (container.is_dict()) return container.dict->Find(item) != nullptr;
    if (container.is_undefined()) Throw("UndefinedError: " + UndefinedMessage(container));
    Throw("TypeError: argument of type '" + TypeName(container) + "' is not iterable");
  }

  bool CompareOp(const std::string& op, const Value& a, const Value& b) {
    if (op == "==") return Equal(a, b);
    if (op == "!=") return !Equal(a, b);
    if (op == "in") return Contains(b, a);
    if (op == "notin") return !Contains(b, a);
    if (a.is_undefined() || b.is_undefined()) {
      Throw("UndefinedError: " + UndefinedMessage(a.is_undefined() ? a : b));
    }
    const int c = Compare(a, b);
    if (op == "<") return c < 0;
    if (op == ">") return c > 0;
    if (op == "<=") return c <= 0;
    return c >= 0;
  }

  // --- methods of str, list and dict ---
  Value BoundMethod(const Value& self, const std::string& name) {
    return Value::Fn(
        name, [self, name](Interpreter& in, Args& a) { return in.CallMethod(self, name, a); });
  }

  Value CallMethod(const Value& self, const std::string& name, Args& a) {
    auto arg = [&](size_t i, const char* key) -> const Value* { return a.Get(i, key); };
    if (self.is_string()) {
      const std::string& s = self.s;
      auto chars = [&](size_t i) {
        const Value* c = arg(i, "chars");
        return c == nullptr || c->is_none() ? kWhitespace : ToStr(*c);
      };
      if (name == "strip") return Value::Str(Strip(s, chars(0), true, true));
      if (name == "lstrip") return Value::Str(Strip(s, chars(0), true, false));
      if (name == "rstrip") return Value::Str(Strip(s, chars(0), false, true));
      if (name == "upper") return Value::Str(Upper(s));
      if (name == "lower") return Value::Str(Lower(s));
      if (name == "title" || name == "capitalize") {
        std::string out = s;
        bool start = true;
        for (size_t i = 0; i < out.size(); ++i) {
          unsigned char c = static_cast<unsigned char>(out[i]);
          if (name == "title") {
            out[i] = static_cast<char>(start ? std::toupper(c) : std::tolower(c));
            start = !std::isalpha(c);
          } else {
            out[i] = static_cast<char>(i == 0 ? std::toupper(c) : std::tolower(c));
          }
        }
        return Value::Str(out);
      }
      if (name == "split" || name == "rsplit") {
        const Value* sep = arg(0, "sep");
        const Value* max = arg(1, "maxsplit");
        const int64_t maxsplit = max == nullptr ? -1 : ToInt(*max, "maxsplit");
        if (name == "rsplit" && maxsplit >= 0) {
          // From the right: split fully, then join the head back.
          std::vector<std::string> parts =
              sep == nullptr || sep->is_none() ? SplitWs(s, -1) : SplitSep(s, ToStr(*sep), -1);
          const std::string glue = sep == nullptr || sep->is_none() ? " " : ToStr(*sep);
          while (static_cast<int64_t>(parts.size()) > maxsplit + 1) {
            parts[0] += glue + parts[1];
            parts.erase(parts.begin() + 1);
          }
          return StrList(parts);
        }
        if (sep == nullptr || sep->is_none()) return StrList(SplitWs(s, maxsplit));
        return StrList(SplitSep(s, ToStr(*sep), maxsplit));
      }
      if (name == "splitlines") {
        std::vector<std::string> lines;
        size_t start = 0;
        for (size_t i = 0; i < s.size(); ++i) {
          if (s[i] == '\n' || s[i] == '\r') {
            lines.push_back(s.substr(start, i - start));
            if (s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n') ++i;
            start = i + 1;
          }
        }
        if (start < s.size()) lines.push_back(s.substr(start));
        return StrList(lines);
      }
      if (name == "startswith" || name == "endswith") {
        const Value* p = arg(0, "prefix");
        if (p == nullptr) Throw("TypeError: " + name + "() takes at least 1 argument");
        std::vector<Value> options = p->is_list() ? *p->list : std::vector<Value>{*p};
        for (const Value& o : options) {
          if (!o.is_string())
            Throw("TypeError: " + name + " first arg must be str or a tuple of str");
          const std::string& x = o.s;
          if (name == "startswith"
                  ? s.compare(0, x.size(), x) == 0
                  : s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0) {
            return Value::Bool(true);
          }
        }
        return Value::Bool(false);
      }
      if (name == "replace") {
        const Value* from = arg(0, "old");
        const Value* to = arg(1, "new");
        const Value* count = arg(2, "count");
        if (from == nullptr || to == nullptr) Throw("TypeError: replace() takes 2 arguments");
        return Value::Str(
            Replace(s, ToStr(*from), ToStr(*to), count ? ToInt(*count, "count") : -1));
      }
      if (name == "find" || name == "rfind" || name == "index" || name == "count") {
        const Value* sub = arg(0, "sub");
        if (sub == nullptr || !sub->is_string()) Throw("TypeError: " + name + "() needs a string");
        if (name == "count") {
          if (sub->s.empty()) return Value::Int(static_cast<int64_t>(CodePoints(s).size()) + 1);
          int64_t n = 0;
          for (size_t k = s.find(sub->s); k != std::string::npos;
               k = s.find(sub->s, k + sub->s.size()))
            ++n;
          return Value::Int(n);
        }
        const size_t k = name == "rfind" ? s.rfind(sub->s) : s.find(sub->s);
        if (k == std::string::npos) {
          if (name == "index") Throw("ValueError: substring not found");
          return Value::Int(-1);
        }
        return Value::Int(static_cast<int64_t>(CodePoints(s.substr(0, k)).size()));
      }
      if (name == "join") {
        const Value* items = arg(0, "iterable");
        if (items == nullptr) Throw("TypeError: join() takes one argument");
        std::string out;
        bool first = true;
        for (const Value& v : Iterate(*items)) {
          if (!v.is_string())
            Throw("TypeError: sequence item: expected str instance, " + TypeName(v) + " found");
          if (!first) out += s;
          out += v.s;
          first = false;
        }
        return Value::Str(out);
      }
      if (name == "isdigit" || name == "isalpha" || name == "isalnum" || name == "isspace" ||
          name == "isupper" || name == "islower") {
        if (s.empty()) return Value::Bool(false);
        bool cased = false;
        for (unsigned char c : s) {
          if (name == "isdigit" && !std::isdigit(c)) return Value::Bool(false);
          if (name == "isalpha" && !std::isalpha(c)) return Value::Bool(false);
          if (name == "isalnum" && !std::isalnum(c)) return Value::Bool(false);
          if (name == "isspace" && !std::isspace(c)) return Value::Bool(false);
          if (name == "isupper" && std::islower(c)) return Value::Bool(false);
          if (name == "islower" && std::isupper(c)) return Value::Bool(false);
          cased = cased || std::isalpha(c);
        }
        return Value::Bool(name == "isupper" || name == "islower" ? cased : true);
      }
      if (name == "format") return Value::Str(Format(s, a));
    }
    if (self.is_dict()) {
      const Dict& d = *self.dict;
      if (name == "get") {
        const Value* k = arg(0, "key");
        if (k == nullptr) Throw("TypeError: get expected at least 1 argument");
        if (const Value* v = d.Find(*k)) return *v;
        const Value* def = arg(1, "default");
        return def ? *def : Value::None();
      }
      if (name == "items" || name == "keys" || name == "values") {
        Value out = Value::MakeList();
        for (const auto& [k, v] : d.items) {
          if (name == "items") {
            out.list->push_back(Value::MakeList({k, v}, true));
          } else {
            out.list->push_back(name == "keys" ? k : v);
          }
        }
        return out;
      }
      if (name == "copy") {
        Value out = Value::MakeDict();
        out.dict->items = d.items;
        return out;
      }
    }
    if (self.is_list()) {
      if (name == "index" || name == "count") {
        const Value* x = arg(0, "value");
        if (x == nullptr) Throw("TypeError: " + name + "() takes one argument");
        int64_t n = 0;
        for (size_t i = 0; i < self.list->size(); ++i) {
          if (Equal((*self.list)[i], *x)) {
            if (name == "index") return Value::Int(static_cast<int64_t>(i));
            ++n;
          }
        }
        if (name == "index") Throw("ValueError: value is not in list");
        return Value::Int(n);
      }
    }
    // Mutating methods exist but the sandbox refuses them, as Jinja's
    // ImmutableSandboxedEnvironment does.
    Throw("SecurityError: access to attribute '" + name + "' of '" + TypeName(self) +
          "' object is unsafe.");
  }

  std::string Format(const std::string& fmt, const Args& a) {
    std::string out;
    size_t auto_index = 0;
    for (size_t i = 0; i < fmt.size(); ++i) {
      const char c = fmt[i];
      if (c == '{' && i + 1 < fmt.size() && fmt[i + 1] == '{') {
        out += '{';
        ++i;
        continue;
      }
      if (c == '}' && i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out += '}';
        ++i;
        continue;
      }
      if (c != '{') {
        out += c;
        continue;
      }
      const size_t end = fmt.find('}', i);
      if (end == std::string::npos) Throw("ValueError: Single '{' encountered in format string");
      const std::string field = fmt.substr(i + 1, end - i - 1);
      const Value* v = nullptr;
      if (field.empty()) {
        if (auto_index < a.positional.size()) v = &a.positional[auto_index++];
      } else if (std::isdigit(static_cast<unsigned char>(field[0]))) {
        const size_t k = std::stoul(field);
        if (k < a.positional.size()) v = &a.positional[k];
      } else {
        for (const auto& [k, val] : a.named) {
          if (k == field) v = &val;
        }
      }
      if (v == nullptr) Throw("IndexError: Replacement index out of range for format");
      out += ToStr(*v);
      i = end;
    }
    return out;
  }

  // --- filters and tests ---
  Value ApplyFilter(const std::string& name, const Value& v, Args& a);
  bool ApplyTest(const std::string& name, const Value& v, Args& a);
  Value MapOrSelect(const std::string& name, const Value& v, Args& a);
};

namespace {

bool IsMethodName(Kind k, const std::string& name) {
  static const std::set<std::string> kStr = {
      "strip",      "lstrip",       "rstrip",      "upper",      "lower",      "title",
      "capitalize", "split",        "rsplit",      "splitlines", "startswith", "endswith",
      "replace",    "find",         "rfind",       "index",      "count",      "join",
      "isdigit",    "isalpha",      "isalnum",     "isspace",    "isupper",    "islower",
      "format",     "center",       "ljust",       "rjust",      "zfill",      "encode",
      "partition",  "rpartition",   "expandtabs",  "casefold",   "swapcase",   "translate",
      "maketrans",  "removeprefix", "removesuffix"};
  static const std::set<std::string> kDict = {"get", "items",   "keys",   "values",     "copy",
                                              "pop", "popitem", "update", "setdefault", "clear"};
  static const std::set<std::string> kList = {"index",  "count", "append", "extend",
                                              "insert", "pop",   "remove", "reverse",
                                              "sort",   "clear", "copy"};
  switch (k) {
    case Kind::kString:
      return kStr.count(name) > 0;
    case Kind::kDict:
      return kDict.count(name) > 0;
    case Kind::kList:
      return kList.count(name) > 0;
    default:
      return false;
  }
}

const std::set<std::string>& FilterNames() {
  static const std::set<std::string> names = {
      "abs",        "attr",       "batch",    "capitalize", "center",    "count",     "d",
      "default",    "dictsort",   "e",        "escape",     "first",     "float",     "forceescape",
      "format",     "groupby",    "indent",   "int",        "items",     "join",      "last",
      "length",     "list",       "lower",    "map",        "max",       "min",       "pprint",
      "reject",     "rejectattr", "replace",  "reverse",    "round",     "safe",      "select",
      "selectattr", "slice",      "sort",     "string",     "striptags", "sum",       "title",
      "tojson",     "trim",       "truncate", "unique",     "upper",     "wordcount", "wordwrap",
      "xmlattr",    "urlencode"};
  return names;
}

const std::set<std::string>& TestNames() {
  static const std::set<std::string> names = {
      "boolean", "callable", "defined",  "divisibleby", "eq",       "equalto",     "escaped",
      "even",    "false",    "filter",   "float",       "ge",       "greaterthan", "gt",
      "in",      "integer",  "iterable", "le",          "lessthan", "lower",       "lt",
      "mapping", "ne",       "none",     "number",      "odd",      "sameas",      "sequence",
      "string",  "test",     "true",     "undefined",   "upper",    "==",          "!=",
      ">",       ">=",       "<",        "<="};
  return names;
}

std::string HtmlEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Jinja's attribute path "a.b.0" on a value.
Value AttrPath(Interpreter& in, Value v, const std::string& path) {
  size_t start = 0;
  while (true) {
    const size_t dot = path.find('.', start);
    const std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!part.empty() && std::all_of(part.begin(), part.end(), ::isdigit)) {
      v = in.GetItem(v, Value::Int(std::stoll(part)));
    } else {
      v = in.GetItem(v, Value::Str(part));
    }
    if (dot == std::string::npos) return v;
    start = dot + 1;
  }
}

}  // namespace

bool IsKnownFilter(std::string_view name) { return FilterNames().count(std::string(name)) > 0; }
bool IsKnownTest(std::string_view name) { return TestNames().count(std::string(name)) > 0; }

bool Interpreter::ApplyTest(const std::string& name, const Value& v, Args& a) {
  const Value* x = a.Get(0, "value");
  auto need = [&]() -> const Value& {
    if (x == nullptr) Throw("TypeError: test '" + name + "' needs an argument");
    return *x;
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "mapping") return v.is_dict();
  if (name == "sequence") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "iterable") return v.is_string() || v.is_list() || v.is_dict() || v.is_undefined();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind == Kind::kInt;
  if (name == "float") return v.kind == Kind::kFloat;
  if (name == "boolean") return v.kind == Kind::kBool;
  if (name == "true") return v.kind == Kind::kBool && v.b;
  if (name == "false") return v.kind == Kind::kBool && !v.b;
  if (name == "callable") return v.kind == Kind::kFunction;
  if (name == "escaped") return false;
  if (name == "odd" || name == "even") {
    const int64_t n = ToInt(v, "value");
    return name == "odd" ? n % 2 != 0 : n % 2 == 0;
  }
  if (name == "divisibleby") {
    const int64_t d = ToInt(need(), "divisor");
    if (d == 0) Throw("ZeroDivisionError: integer division or modulo by zero");
    return ToInt(v, "value") % d == 0;
  }
  if (name == "eq" || name == "equalto" || name == "==") return Equal(v, need());
  if (name == "ne" || name == "!=") return !Equal(v, need());
  if (name == "lt" || name == "lessthan" || name == "<") return CompareOp("<", v, need());
  if (name == "le" || name == "<=") return CompareOp("<=", v, need());
  if (name == "gt" || name == "greaterthan" || name == ">") return CompareOp(">", v, need());
  if (name == "ge" || name == ">=") return CompareOp(">=", v, need());
  if (name == "in") return Contains(need(), v);
  if (name == "sameas") {
    const Value& o = need();
    if (v.kind != o.kind) return false;
    if (v.is_list()) return v.list == o.list;
    if (v.is_dict()) return v.dict == o.dict;
    return Equal(v, o);
  }
  if (name == "lower") return v.is_string() && Lower(v.s) == v.s;
  if (name == "upper") return v.is_string() && Upper(v.s) == v.s;
  if (name == "filter") return x != nullptr && x->is_string() && IsKnownFilter(x->s);
  if (name == "test") return x != nullptr && x->is_string() && IsKnownTest(x->s);
  Throw("no test named '" + name + "'");
}

Value Interpreter::MapOrSelect(const std::string& name, const Value& v, Args& a) {
  // Jinja yields nothing for a false value (None, an empty list).
  std::vector<Value> items = Truthy(v) ? Iterate(v) : std::vector<Value>{};
  Value out = Value::MakeList();
  out.generator = true;
  if (name == "map") {
    const Value* attribute = nullptr;
    for (const auto& [k, val] : a.named) {
      if (k == "attribute") attribute = &val;
    }
    if (attribute != nullptr) {
      const Value* def = nullptr;
      for (const auto& [k, val] : a.named) {
        if (k == "default") def = &val;
      }
      for (const Value& item : items) {
        Value r = AttrPath(*this, item, ToStr(*attribute));
        if (r.is_undefined() && def != nullptr) r = *def;
        out.list->push_back(r);
      }
      return out;
    }
    if (a.positional.empty()) return out;
    const std::string filter = ToStr(a.positional[0]);
    Args rest;
    rest.positional.assign(a.positional.begin() + 1, a.positional.end());
    rest.named = a.named;
    for (const Value& item : items) out.list->push_back(ApplyFilter(filter, item, rest));
    return out;
  }
  const bool by_attr = name == "selectattr" || name == "rejectattr";
  const bool keep_if = name == "select" || name == "selectattr";
  size_t t = 0;
  std::string attr;
  if (by_attr) {
    if (a.positional.empty()) Throw("TypeError: " + name + " needs an attribute");
    attr = ToStr(a.positional[0]);
    t = 1;
  }
  std::string test;
  Args test_args;
  if (t < a.positional.size()) {
    test = ToStr(a.positional[t]);
    if (!IsKnownTest(test)) Throw("TemplateRuntimeError: No test named '" + test + "'");
    test_args.positional.assign(a.positional.begin() + t + 1, a.positional.end());
  }
  for (const Value& item : items) {
    const Value subject = by_attr ? AttrPath(*this, item, attr) : item;
    const bool pass = test.empty() ? Truthy(subject) : ApplyTest(test, subject, test_args);
    if (pass == keep_if) out.list->push_back(item);
  }
  return out;
}

Value Interpreter::ApplyFilter(const std::string& name, const Value& v, Args& a) {
  auto arg = [&](size_t i, const char* key) -> const Value* { return a.Get(i, key); };
  auto flag = [&](size_t i, const char* key, bool def) {
    const Value* x = arg(i, key);
    return x == nullptr ? def : Truthy(*x);
  };
  if (name == "tojson") {
    const Value* indent = arg(1, "indent");
    const Value* seps = arg(2, "separators");
    const bool sort_keys = flag(3, "sort_keys", false);
    const int ind =
        indent == nullptr || indent->is_none() ? -1 : static_cast<int>(ToInt(*indent, "indent"));
    std::string item_sep = ind >= 0 ? "," : ", ", key_sep = ": ";
    if (seps != nullptr && seps->is_list() && seps->list->size() == 2) {
      item_sep = ToStr((*seps->list)[0]);
      key_sep = ToStr((*seps->list)[1]);
    }
    return Value::Str(ToJson(v, ind, item_sep, key_sep, sort_keys));
  }
  if (name == "length" || name == "count") {
    if (v.generator) Throw("TypeError: object of type 'generator' has no len()");
    switch (v.kind) {
      case Kind::kString:
        return Value::Int(static_cast<int64_t>(CodePoints(v.s).size()));
      case Kind::kList:
        return Value::Int(static_cast<int64_t>(v.list->size()));
      case Kind::kDict:
        return Value::Int(static_cast<int64_t>(v.dict->items.size()));
      case Kind::kUndefined:
        return Value::Int(0);
      default:
        Throw("TypeError: object of type '" + TypeName(v) + "' has no len()");
    }
  }
  if (name == "default" || name == "d") {
    const Value* def = arg(0, "default_value");
    const bool boolean = flag(1, "boolean", false);
    if (v.is_undefined() || (boolean && !Truthy(v))) return def ? *def : Value::Str("");
    return v;
  }
  if (name == "trim") {
    const Value* chars = arg(0, "chars");
    return Value::Str(
        Strip(ToStr(v), chars && !chars->is_none() ? ToStr(*chars) : kWhitespace, true, true));
  }
  if (name == "string") return v.is_string() ? v : Value::Str(ToStr(v));
  if (name == "safe") {
    Value r = Value::Str(ToStr(v));
    r.safe = true;
    return r;
  }
  if (name == "upper") return Value::Str(Upper(ToStr(v)));
  if (name == "lower") return Value::Str(Lower(ToStr(v)));
  if (name == "capitalize" || name == "title") {
    Args none;
    return CallMethod(Value::Str(ToStr(v)), name, none);
  }
  if (name == "escape" || name == "e" || name == "forceescape")
    return Value::Str(HtmlEscape(ToStr(v)));
  if (name == "join") {
    const Value* sep = arg(0, "d");
    const Value* attribute = arg(1, "attribute");
    std::string out;
    bool first = true;
    for (Value item : Iterate(v)) {
      if (attribute != nullptr) item = AttrPath(*this, item, ToStr(*attribute));
      if (!first) out += sep ? ToStr(*sep) : "";
      out += ToStr(item);
      first = false;
    }
    return Value::Str(out);
  }
  if (name == "items") {
    if (v.is_undefined()) return Value::MakeList();
    if (!v.is_dict()) Throw("TypeError: items filter of a non-mapping " + TypeName(v));
    Args none;
    Value out = CallMethod(v, "items", none);
    out.generator = true;
    return out;
  }
  if (name == "dictsort") {
    if (!v.is_dict()) Throw("TypeError: dictsort of a non-mapping " + TypeName(v));
    const bool case_sensitive = flag(0, "case_sensitive", false);
    const Value* by = arg(1, "by");
    const bool by_value = by != nullptr && ToStr(*by) == "value";
    const bool reverse = flag(2, "reverse", false);
    std::vector<std::pair<Value, Value>> items = v.dict->items;
    auto key = [&](const std::pair<Value, Value>& kv) {
      Value k = by_value ? kv.second : kv.first;
      if (!case_sensitive && k.is_string()) k.s = Lower(k.s);
      return k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const auto& x, const auto& y) {
      const int c = Compare(key(x), key(y));
      return reverse ? c > 0 : c < 0;
    });
    Value out = Value::MakeList();
    for (auto& [k, val] : items) out.list->push_back(Value::MakeList({k, val}, true));
    return out;
  }
  if (name == "list") return Value::MakeList(Iterate(v));
  if (name == "first" || name == "last") {
    std::vector<Value> items = Iterate(v);
    if (items.empty()) return Value::Undefined("no first item, sequence was empty");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "reverse") {
    if (v.is_string()) {
      std::vector<std::string> cps = CodePoints(v.s);
      std::string out;
      for (auto it = cps.rbegin(); it != cps.rend(); ++it) out += *it;
      return Value::Str(out);
    }
    std::vector<Value> items = Iterate(v);
    std::reverse(items.begin(), items.end());
    Value out = Value::MakeList(std::move(items));
    out.generator = true;  // reversed() is an iterator
    return out;
  }
  if (name == "select" || name == "reject" || name == "selectattr" || name == "rejectattr" ||
      name == "map") {
    return MapOrSelect(name, v, a);
  }
  if (name == "indent") {
    const Value* width = arg(0, "width");
    const bool first = flag(1, "first", false);
    const bool blank = flag(2, "blank", false);
    const std::string indention = width == nullptr     ? "    "
                                  : width->is_string() ? width->s
                                                       : std::string(ToInt(*width, "width"), ' ');
    std::string s = ToStr(v) + "\n";
    std::vector<std::string> lines;
    {
      Args none;
      Value l = CallMethod(Value::Str(s), "splitlines", none);
      for (const Value& x : *l.list) lines.push_back(x.s);
    }
    std::string rv;
    if (blank) {
      for (size_t i = 0; i < lines.size(); ++i) {
        if (i > 0) rv += "\n" + indention;
        rv += lines[i];
      }
    } else {
      rv = lines.empty() ? "" : lines[0];
      for (size_t i = 1; i < lines.size(); ++i) {
        rv += "\n";
        if (!lines[i].empty()) rv += indention;
        rv += lines[i];
      }
    }
    if (first) rv = indention + rv;
    return Value::Str(rv);
  }
  if (name == "replace") {
    const Value* from = arg(0, "old");
    const Value* to = arg(1, "new");
    const Value* count = arg(2, "count");
    if (from == nullptr || to == nullptr) Throw("TypeError: replace needs two arguments");
    return Value::Str(Replace(ToStr(v), ToStr(*from), ToStr(*to),
                              count && !count->is_none() ? ToInt(*count, "count") : -1));
  }
  if (name == "int") {
    const Value* def = arg(0, "default");
    if (v.kind == Kind::kInt) return v;
    if (v.kind == Kind::kBool) return Value::Int(v.b);
    if (v.kind == Kind::kFloat) return Value::Int(static_cast<int64_t>(v.f));
    if (v.is_string()) {
      try {
        size_t used = 0;
        const std::string t = Strip(v.s, kWhitespace, true, true);
        const long long x = std::stoll(t, &used, 10);
        if (used == t.size()) return Value::Int(x);
        const double d = std::stod(t, &used);
        if (used == t.size()) return Value::Int(static_cast<int64_t>(d));
      } catch (...) {
      }
    }
    return def ? *def : Value::Int(0);
  }
  if (name == "float") {
    const Value* def = arg(0, "default");
    if (v.is_number()) return Value::Float(v.as_double());
    if (v.is_string()) {
      try {
        size_t used = 0;
        const double d = std::stod(v.s, &used);
        if (used == v.s.size()) return Value::Float(d);
      } catch (...) {
      }
    }
    return def ? *def : Value::Float(0.0);
  }
  if (name == "abs") {
    if (v.kind == Kind::kFloat) return Value::Float(std::fabs(v.f));
    return Value::Int(std::llabs(ToInt(v, "value")));
  }
  if (name == "round") {
    const Value* precision = arg(0, "precision");
    const Value* method = arg(1, "method");
    const double scale = std::pow(10.0, precision ? ToInt(*precision, "precision") : 0);
    const std::string m = method ? ToStr(*method) : "common";
    const double x = v.as_double() * scale;
    const double r = m == "ceil" ? std::ceil(x) : m == "floor" ? std::floor(x) : std::round(x);
    return Value::Float(r / scale);
  }
  if (name == "unique" || name == "sort" || name == "min" || name == "max") {
    const bool case_sensitive = flag(name == "sort" ? 1 : 0, "case_sensitive", false);
    const Value* attribute = nullptr;
    for (const auto& [k, val] : a.named) {
      if (k == "attribute") attribute = &val;
    }
    if (name == "unique" && attribute == nullptr) attribute = arg(1, "attribute");
    if (name == "sort" && attribute == nullptr) attribute = arg(2, "attribute");
    auto key = [&](const Value& item) {
      Value k = attribute ? AttrPath(*this, item, ToStr(*attribute)) : item;
      if (!case_sensitive && k.is_string()) k.s = Lower(k.s);
      return k;
    };
    std::vector<Value> items = Iterate(v);
    if (name == "unique") {
      std::vector<Value> out, seen;
      for (const Value& item : items) {
        const Value k = key(item);
        if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return Equal(s, k); })) {
          seen.push_back(k);
          out.push_back(item);
        }
      }
      Value r = Value::MakeList(std::move(out));
      r.generator = true;
      return r;
    }
    if (name == "sort") {
      const bool reverse = flag(0, "reverse", false);
      std::stable_sort(items.begin(), items.end(), [&](const Value& x, const Value& y) {
        const int c = Compare(key(x), key(y));
        return reverse ? c > 0 : c < 0;
      });
      return Value::MakeList(std::move(items));
    }
    if (items.empty()) return Value::Undefined("no " + name + " item, sequence was empty");
    Value best = items[0];
    for (const Value& item : items) {
      const int c = Compare(key(item), key(best));
      if (name == "min" ? c < 0 : c > 0) best = item;
    }
    return best;
  }
  if (name == "sum") {
    Value total = Value::Int(0);
    for (const Value& item : Iterate(v)) total = BinaryOp("+", total, item);
    return total;
  }
  if (name == "wordcount") return Value::Int(static_cast<int64_t>(SplitWs(ToStr(v), -1).size()));
  if (name == "center") {
    const int64_t width = arg(0, "width") ? ToInt(*arg(0, "width"), "width") : 80;
    std::string s = ToStr(v);
    const int64_t len = static_cast<int64_t>(CodePoints(s).size());
    if (len >= width) return Value::Str(s);
    const int64_t left = (width - len) / 2;
    return Value::Str(std::string(left, ' ') + s + std::string(width - len - left, ' '));
  }
  if (name == "attr") {
    const Value* n = arg(0, "name");
    if (n == nullptr) Throw("TypeError: attr needs a name");
    return GetAttr(v, ToStr(*n));
  }
  if (name == "batch" || name == "slice") {
    const int64_t n = ToInt(arg(0, "linecount") ? *arg(0, "linecount") : Value::Int(1), "count");
    if (n <= 0) Throw("ValueError: batch size must be positive");
    std::vector<Value> items = Iterate(v);
    Value out = Value::MakeList();
    if (name == "batch") {
      for (size_t i = 0; i < items.size(); i += n) {
        out.list->push_back(Value::MakeList(
            std::vector<Value>(items.begin() + i, items.begin() + std::min(items.size(), i + n))));
      }
    } else {
      const size_t per = items.size() / n, extra = items.size() % n;
      size_t offset = 0;
      for (int64_t i = 0; i < n; ++i) {
        const size_t count = per + (static_cast<size_t>(i) < extra ? 1 : 0);
        out.list->push_back(Value::MakeList(
            std::vector<Value>(items.begin() + offset, items.begin() + offset + count)));
        offset += count;
      }
    }
    return out;
  }
  if (name == "format")
    return Value::Str(PercentFormat(ToStr(v), Value::MakeList(a.positional, true)));
  if (name == "truncate") {
    const int64_t length = arg(0, "length") ? ToInt(*arg(0, "length"), "length") : 255;
    const std::string end = arg(2, "end") ? ToStr(*arg(2, "end")) : "...";
    std::vector<std::string> cps = CodePoints(ToStr(v));
    if (static_cast<int64_t>(cps.size()) <= length) return Value::Str(ToStr(v));
    std::string out;
    for (int64_t i = 0;
         i < length - static_cast<int64_t>(end.size()) && i < static_cast<int64_t>(cps.size()); ++i)
      out += cps[i];
    return Value::Str(out + end);
  }
  if (name == "pprint") return Value::Str(Repr(v));
  if (name == "striptags") return Value::Str(ToStr(v));
  Throw("TemplateRuntimeError: the filter '" + name + "' is not supported");
}

Value NamespaceFn(Interpreter&, Args& a) {
  Value ns = Value::MakeDict();
  ns.dict->is_namespace = true;
  for (const Value& p : a.positional) {
    if (p.is_dict()) {
      for (const auto& kv : p.dict->items) ns.dict->Set(kv.first, kv.second);
    }
  }
  for (const auto& [k, v] : a.named) ns.dict->Set(Value::Str(k), v);
  return ns;
}

}  // namespace internal

StatusOr<Template> Template::Parse(std::string_view source) {
  ASSIGN_OR_RETURN(std::shared_ptr<internal::Body> body, internal::ParseTemplate(source));
  auto node = std::make_shared<internal::Node>();
  node->body = std::move(body);
  Template t;
  t.root_ = std::move(node);
  return t;
}

StatusOr<std::string> Template::Render(const nlohmann::ordered_json& variables,
                                       const RenderOptions& options) const {
  using namespace internal;
  if (!variables.is_object() && !variables.is_null()) {
    return InvalidArgumentError("template variables must be an object");
  }
  Interpreter in(options);
  in.frames.emplace_back();
  Frame& globals = in.frames.back();
  globals.vars["raise_exception"] =
      Value::Fn("raise_exception", [](Interpreter&, Args& a) -> Value {
        Throw("TemplateError: " + (a.positional.empty() ? std::string() : ToStr(a.positional[0])));
      });
  globals.vars["strftime_now"] = Value::Fn("strftime_now", [](Interpreter& in, Args& a) {
    if (a.positional.empty()) Throw("TypeError: strftime_now() takes a format");
    std::tm tm{};
    if (in.options.now) {
      tm = in.options.now();
    } else {
      const std::time_t t = std::time(nullptr);
      localtime_r(&t, &tm);
    }
    char buf[512];
    const size_t n = std::strftime(buf, sizeof buf, ToStr(a.positional[0]).c_str(), &tm);
    return Value::Str(std::string(buf, n));
  });
  globals.vars["namespace"] = Value::Fn("namespace", NamespaceFn);
  globals.vars["range"] = Value::Fn("range", [](Interpreter& in, Args& a) {
    int64_t start = 0, stop = 0, step = 1;
    if (a.positional.size() == 1) {
      stop = ToInt(a.positional[0], "range");
    } else if (a.positional.size() >= 2) {
      start = ToInt(a.positional[0], "range");
      stop = ToInt(a.positional[1], "range");
      if (a.positional.size() > 2) step = ToInt(a.positional[2], "range");
    }
    if (step == 0) Throw("ValueError: range() arg 3 must not be zero");
    Value out = Value::MakeList();
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      in.Step();
      out.list->push_back(Value::Int(i));
    }
    return out;
  });
  globals.vars["dict"] = Value::Fn("dict", [](Interpreter&, Args& a) {
    Value d = Value::MakeDict();
    for (const Value& p : a.positional) {
      if (p.is_dict()) d.dict->items = p.dict->items;
    }
    for (const auto& [k, v] : a.named) d.dict->Set(Value::Str(k), v);
    return d;
  });
  for (auto it = variables.begin(); it != variables.end(); ++it) {
    globals.vars[it.key()] = Value::FromJson(it.value());
  }
  in.frames.emplace_back();  // the template's own top-level names
  std::string out;
  in.out = &out;
  try {
    in.Run(*root_->body);
  } catch (const RenderError& e) {
    return InvalidArgumentError(e.what());
  } catch (const BreakSignal&) {
    return InvalidArgumentError("'break' outside a loop");
  } catch (const ContinueSignal&) {
    return InvalidArgumentError("'continue' outside a loop");
  }
  return out;
}

}  // namespace kvmesh::jinja
