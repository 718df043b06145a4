// The Jinja engine's filters and tests, following Jinja2 3.1.
#include <algorithm>
#include <cmath>
#include <set>

#include "common/jinja/interpreter.h"

namespace kvmesh::jinja::internal {

using Kind = Value::Kind;

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

}  // namespace kvmesh::jinja::internal
