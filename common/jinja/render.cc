// The Jinja engine's interpreter: scopes, statements, expressions and the
// operators, following Python and Jinja2 3.1. Filters, tests and methods are
// in filters.cc and methods.cc.
#include <algorithm>
#include <cmath>

#include "common/jinja/interpreter.h"

namespace kvmesh::jinja {
namespace internal {

struct Node {
  std::shared_ptr<Body> body;
};

using Kind = Value::Kind;

void Throw(const std::string& what) { throw RenderError(what); }

int64_t ToInt(const Value& v, const char* what) {
  if (v.kind == Kind::kInt) return v.i;
  if (v.kind == Kind::kBool) return v.b;
  if (v.kind == Kind::kFloat) return static_cast<int64_t>(v.f);
  Throw(std::string("TypeError: ") + what + " must be an integer, not " + TypeName(v));
}

namespace {

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

}  // namespace

void Interpreter::Step() {
  if (++steps > options.limits.max_steps) {
    Throw("template exceeded its limit of " + std::to_string(options.limits.max_steps) + " steps");
  }
}

void Interpreter::Write(const std::string& s) {
  out->append(s);
  if (out->size() > options.limits.max_output_bytes) {
    Throw("template output exceeded " + std::to_string(options.limits.max_output_bytes) + " bytes");
  }
}

Value Interpreter::Lookup(const std::string& name) const {
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    auto f = it->vars.find(name);
    if (f != it->vars.end()) return f->second;
  }
  return Value::Undefined("'" + name + "' is undefined");
}

void Interpreter::Assign(const std::string& name, Value v) {
  frames.back().vars[name] = std::move(v);
}

void Interpreter::Run(const Body& body) {
  for (const StmtPtr& s : body) Exec(*s);
}

std::string Interpreter::Capture(const Body& body) {
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

void Interpreter::Exec(const Stmt& s) {
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
    case Stmt::Kind::kSet:
      SetTargets(s, Eval(*s.expr));
      return;
    case Stmt::Kind::kSetBlock: {
      Value v = Value::Str(Capture(s.body));
      if (s.expr) v = ApplyFilterChain(*s.expr, v);
      SetTargets(s, std::move(v));
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

void Interpreter::SetTargets(const Stmt& s, Value v) {
  if (!s.attr_set) {
    Bind(s.targets, std::move(v));
    return;
  }
  Value ns = Lookup(s.targets[0]);
  if (!ns.is_dict() || !ns.dict->is_namespace) {
    Throw("TemplateRuntimeError: cannot assign attribute on non-namespace object");
  }
  ns.dict->Set(Value::Str(s.targets[1]), std::move(v));
}

void Interpreter::Bind(const std::vector<std::string>& targets, Value v) {
  if (targets.size() == 1) {
    Assign(targets[0], std::move(v));
  } else {
    Unpack(targets, v);
  }
}

void Interpreter::Unpack(const std::vector<std::string>& targets, const Value& v) {
  const std::vector<Value> items = Iterate(v);
  if (items.size() != targets.size()) {
    Throw("ValueError: expected " + std::to_string(targets.size()) + " values to unpack, got " +
          std::to_string(items.size()));
  }
  for (size_t i = 0; i < targets.size(); ++i) Assign(targets[i], items[i]);
}

std::vector<Value> Interpreter::Iterate(const Value& v) {
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

void Interpreter::ExecFor(const Stmt& s, const Value& iterable, int depth_level) {
  std::vector<Value> items = Iterate(iterable);
  if (s.cond) {
    // The filter runs with the loop variable bound, before loop.* exists.
    std::vector<Value> kept;
    frames.emplace_back();
    for (const Value& item : items) {
      Bind(s.targets, item);
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
      Bind(s.targets, items[i]);
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

Value Interpreter::MakeMacro(const Stmt& s, const std::string& name_override) {
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

Value Interpreter::Eval(const Expr& e) {
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

Args Interpreter::EvalArgs(const Expr& e, size_t first) {
  Args a;
  for (size_t i = first; i < e.args.size(); ++i) a.positional.push_back(Eval(*e.args[i]));
  for (const auto& [k, v] : e.named) a.named.emplace_back(k, Eval(*v));
  return a;
}

Value Interpreter::ApplyFilterChain(const Expr& chain, Value v) {
  // chain is filter(filter(null, ...), ...): apply innermost first.
  std::vector<const Expr*> filters;
  for (const Expr* e = &chain; e != nullptr; e = e->args[0].get()) filters.push_back(e);
  for (auto it = filters.rbegin(); it != filters.rend(); ++it) {
    Args args = EvalArgs(**it, 1);
    v = ApplyFilter((*it)->name, v, args);
  }
  return v;
}

Value Interpreter::Call(const Value& callee, Args& args) {
  if (callee.kind == Kind::kFunction) return callee.fn->call(*this, args);
  if (callee.is_dict()) {
    if (const Value* c = callee.dict->Find(Value::Str("__call__"))) return Call(*c, args);
  }
  if (callee.is_undefined()) Throw("UndefinedError: " + UndefinedMessage(callee));
  Throw("TypeError: '" + TypeName(callee) + "' object is not callable");
}

std::string Interpreter::UndefinedMessage(const Value& v) {
  return v.s.empty() ? "value is undefined" : v.s;
}

Value Interpreter::GetAttr(const Value& obj, const std::string& name) {
  if (obj.is_undefined()) Throw("UndefinedError: " + UndefinedMessage(obj));
  if (obj.is_dict()) {
    if (!obj.dict->is_namespace && IsMethodName(Kind::kDict, name)) return BoundMethod(obj, name);
    if (const Value* v = obj.dict->Find(Value::Str(name))) return *v;
    return Value::Undefined("'" + TypeName(obj) + " object' has no attribute '" + name + "'");
  }
  if (IsMethodName(obj.kind, name)) return BoundMethod(obj, name);
  return Value::Undefined("'" + TypeName(obj) + " object' has no attribute '" + name + "'");
}

Value Interpreter::GetItem(const Value& obj, const Value& key) {
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

Value Interpreter::Slice(const Value& obj, const Value& a, const Value& b, const Value& c) {
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

Value Interpreter::BoundMethod(const Value& self, const std::string& name) {
  return Value::Fn(name,
                   [self, name](Interpreter& in, Args& a) { return in.CallMethod(self, name, a); });
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
