// The Jinja engine's operators (+ - * / // % ** ~, comparisons, `in`, and
// `%` string formatting), with Python's types and errors.
#include <cmath>

#include "common/jinja/interpreter.h"

namespace kvmesh::jinja::internal {

using Kind = Value::Kind;

Value Interpreter::BinaryOp(const std::string& op, const Value& a, const Value& b) {
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

std::string Interpreter::PercentFormat(const std::string& fmt, const Value& arg) {
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
  if (next < args.size()) Throw("TypeError: not all arguments converted during string formatting");
  return out;
}

bool Interpreter::Contains(const Value& container, const Value& item) {
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

bool Interpreter::CompareOp(const std::string& op, const Value& a, const Value& b) {
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

}  // namespace kvmesh::jinja::internal
