#include "common/jinja/value.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

namespace kvmesh::jinja::internal {

const Value* Dict::Find(const Value& key) const {
  for (const auto& [k, v] : items) {
    if (Equal(k, key)) return &v;
  }
  return nullptr;
}

Value* Dict::Find(const Value& key) {
  for (auto& [k, v] : items) {
    if (Equal(k, key)) return &v;
  }
  return nullptr;
}

void Dict::Set(const Value& key, Value value) {
  if (Value* v = Find(key)) {
    *v = std::move(value);
  } else {
    items.emplace_back(key, std::move(value));
  }
}

const Value* Args::Get(size_t index, const std::string& name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : named) {
    if (k == name) return &v;
  }
  return nullptr;
}

Value Value::FromJson(const nlohmann::ordered_json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null:
      return None();
    case nlohmann::json::value_t::boolean:
      return Bool(j.get<bool>());
    case nlohmann::json::value_t::number_integer:
      return Int(j.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return Int(static_cast<int64_t>(j.get<uint64_t>()));
    case nlohmann::json::value_t::number_float:
      return Float(j.get<double>());
    case nlohmann::json::value_t::string:
      return Str(j.get<std::string>());
    case nlohmann::json::value_t::array: {
      Value v = MakeList();
      for (const auto& e : j) v.list->push_back(FromJson(e));
      return v;
    }
    case nlohmann::json::value_t::object: {
      Value v = MakeDict();
      for (auto it = j.begin(); it != j.end(); ++it) {
        v.dict->items.emplace_back(Str(it.key()), FromJson(it.value()));
      }
      return v;
    }
    default:
      return None();
  }
}

bool Truthy(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return false;
    case Value::Kind::kBool:
      return v.b;
    case Value::Kind::kInt:
      return v.i != 0;
    case Value::Kind::kFloat:
      return v.f != 0.0;
    case Value::Kind::kString:
      return !v.s.empty();
    case Value::Kind::kList:
      return v.generator || !v.list->empty();
    case Value::Kind::kDict:
      return v.dict->is_namespace || !v.dict->items.empty();
    case Value::Kind::kFunction:
      return true;
  }
  return false;
}

std::string FloatRepr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0.0) return std::signbit(d) ? "-0.0" : "0.0";
  // The shortest digits that round-trip, placed as Python's repr places
  // them: positional for exponents -4..15, scientific otherwise.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, r.ptr);  // "-1.2345e+02"
  const size_t e = sci.find('e');
  std::string mant = sci.substr(0, e);
  const int exp = std::stoi(sci.substr(e + 1));
  std::string sign;
  if (mant[0] == '-') {
    sign = "-";
    mant.erase(0, 1);
  }
  std::string digits;
  for (char c : mant) {
    if (c != '.') digits += c;
  }
  if (exp >= -5 + 1 && exp < 16) {
    std::string out;
    if (exp < 0) {
      out = "0." + std::string(-exp - 1, '0') + digits;
    } else if (static_cast<int>(digits.size()) <= exp + 1) {
      out = digits + std::string(exp + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, exp + 1) + "." + digits.substr(exp + 1);
    }
    return sign + out;
  }
  std::string m = digits.substr(0, 1);
  if (digits.size() > 1) m += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
  return sign + m + ebuf;
}

namespace {

bool IsPrintable(uint32_t cp) {
  if (cp < 0x20 || cp == 0x7f) return false;
  if (cp >= 0x80 && cp < 0xa0) return false;
  return true;
}

// Decodes one UTF-8 sequence at s[i]; returns its length (1 for a bad byte).
size_t Utf8At(const std::string& s, size_t i, uint32_t* cp) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + n > s.size()) n = 1;
  if (n == 1) {
    *cp = c;
    return 1;
  }
  uint32_t v = c & (0x7f >> n);
  for (size_t k = 1; k < n; ++k) v = (v << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3f);
  *cp = v;
  return n;
}

std::string StrRepr(const std::string& s) {
  const bool has_single = s.find('\'') != std::string::npos;
  const bool has_double = s.find('"') != std::string::npos;
  const char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t n = Utf8At(s, i, &cp);
    if (cp == static_cast<uint32_t>(quote) || cp == '\\') {
      out += '\\';
      out += static_cast<char>(cp);
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (!IsPrintable(cp)) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", cp);
      out += buf;
    } else {
      out.append(s, i, n);
    }
    i += n;
  }
  out += quote;
  return out;
}

void JsonString(const std::string& s, std::string* out) {
  *out += '"';
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        *out += "\\\"";
        break;
      case '\\':
        *out += "\\\\";
        break;
      case '\n':
        *out += "\\n";
        break;
      case '\r':
        *out += "\\r";
        break;
      case '\t':
        *out += "\\t";
        break;
      case '\b':
        *out += "\\b";
        break;
      case '\f':
        *out += "\\f";
        break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          *out += buf;
        } else {
          *out += ch;
        }
    }
  }
  *out += '"';
}

void JsonValue(const Value& v, int indent, int depth, const std::string& item_sep,
               const std::string& key_sep, bool sort_keys, std::string* out) {
  auto newline = [&](int d) {
    if (indent < 0) return;
    *out += '\n';
    out->append(static_cast<size_t>(indent) * d, ' ');
  };
  switch (v.kind) {
    case Value::Kind::kNone:
      *out += "null";
      return;
    case Value::Kind::kBool:
      *out += v.b ? "true" : "false";
      return;
    case Value::Kind::kInt:
      *out += std::to_string(v.i);
      return;
    case Value::Kind::kFloat:
      if (std::isnan(v.f)) {
        *out += "NaN";
      } else if (std::isinf(v.f)) {
        *out += v.f < 0 ? "-Infinity" : "Infinity";
      } else {
        *out += FloatRepr(v.f);
      }
      return;
    case Value::Kind::kString:
      JsonString(v.s, out);
      return;
    case Value::Kind::kList: {
      if (v.generator) {
        throw RenderError("TypeError: Object of type generator is not JSON serializable");
      }
      if (v.list->empty()) {
        *out += "[]";
        return;
      }
      *out += '[';
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i > 0) *out += item_sep;
        newline(depth + 1);
        JsonValue((*v.list)[i], indent, depth + 1, item_sep, key_sep, sort_keys, out);
      }
      newline(depth);
      *out += ']';
      return;
    }
    case Value::Kind::kDict: {
      if (v.dict->items.empty()) {
        *out += "{}";
        return;
      }
      std::vector<const std::pair<Value, Value>*> items;
      for (const auto& kv : v.dict->items) items.push_back(&kv);
      if (sort_keys) {
        std::stable_sort(items.begin(), items.end(),
                         [](auto* a, auto* b) { return Compare(a->first, b->first) < 0; });
      }
      *out += '{';
      for (size_t i = 0; i < items.size(); ++i) {
        if (i > 0) *out += item_sep;
        newline(depth + 1);
        const Value& k = items[i]->first;
        if (k.is_string()) {
          JsonString(k.s, out);
        } else if (k.kind == Value::Kind::kInt || k.kind == Value::Kind::kFloat ||
                   k.kind == Value::Kind::kBool || k.is_none()) {
          std::string key;
          JsonValue(k, -1, 0, item_sep, key_sep, false, &key);
          JsonString(key, out);
        } else {
          throw RenderError("TypeError: keys must be str, int, float, bool or None, not " +
                            TypeName(k));
        }
        *out += key_sep;
        JsonValue(items[i]->second, indent, depth + 1, item_sep, key_sep, sort_keys, out);
      }
      newline(depth);
      *out += '}';
      return;
    }
    case Value::Kind::kUndefined:
    case Value::Kind::kFunction:
      throw RenderError("TypeError: Object of type " + TypeName(v) + " is not JSON serializable");
  }
}

}  // namespace

std::string TypeName(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "Undefined";
    case Value::Kind::kNone:
      return "NoneType";
    case Value::Kind::kBool:
      return "bool";
    case Value::Kind::kInt:
      return "int";
    case Value::Kind::kFloat:
      return "float";
    case Value::Kind::kString:
      return "str";
    case Value::Kind::kList:
      return v.generator ? "generator" : v.tuple ? "tuple" : "list";
    case Value::Kind::kDict:
      return v.dict->is_namespace ? "Namespace" : "dict";
    case Value::Kind::kFunction:
      return "function";
  }
  return "object";
}

std::string Repr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kString:
      return StrRepr(v.s);
    case Value::Kind::kList: {
      if (v.generator) return "<generator object>";
      std::string out = v.tuple ? "(" : "[";
      for (size_t i = 0; i < v.list->size(); ++i) {
        if (i > 0) out += ", ";
        out += Repr((*v.list)[i]);
      }
      if (v.tuple && v.list->size() == 1) out += ",";
      out += v.tuple ? ")" : "]";
      return out;
    }
    case Value::Kind::kDict: {
      if (v.dict->is_namespace) return "<Namespace>";
      std::string out = "{";
      for (size_t i = 0; i < v.dict->items.size(); ++i) {
        if (i > 0) out += ", ";
        out += Repr(v.dict->items[i].first) + ": " + Repr(v.dict->items[i].second);
      }
      return out + "}";
    }
    default:
      return ToStr(v);
  }
}

std::string ToStr(const Value& v) {
  switch (v.kind) {
    case Value::Kind::kUndefined:
      return "";
    case Value::Kind::kNone:
      return "None";
    case Value::Kind::kBool:
      return v.b ? "True" : "False";
    case Value::Kind::kInt:
      return std::to_string(v.i);
    case Value::Kind::kFloat:
      return FloatRepr(v.f);
    case Value::Kind::kString:
      return v.s;
    case Value::Kind::kFunction:
      return "<function " + v.fn->name + ">";
    default:
      return Repr(v);
  }
}

bool Equal(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    if (a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat) {
      const int64_t x = a.kind == Value::Kind::kBool ? a.b : a.i;
      const int64_t y = b.kind == Value::Kind::kBool ? b.b : b.i;
      return x == y;
    }
    return a.as_double() == b.as_double();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case Value::Kind::kUndefined:
    case Value::Kind::kNone:
      return true;
    case Value::Kind::kString:
      return a.s == b.s;
    case Value::Kind::kList:
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i) {
        if (!Equal((*a.list)[i], (*b.list)[i])) return false;
      }
      return true;
    case Value::Kind::kDict:
      if (a.dict == b.dict) return true;
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* other = b.dict->Find(k);
        if (other == nullptr || !Equal(v, *other)) return false;
      }
      return true;
    case Value::Kind::kFunction:
      return a.fn == b.fn;
    default:
      return false;
  }
}

int Compare(const Value& a, const Value& b) {
  if (a.is_number() && b.is_number()) {
    const double x = a.as_double(), y = b.as_double();
    if (a.kind != Value::Kind::kFloat && b.kind != Value::Kind::kFloat) {
      const int64_t p = a.kind == Value::Kind::kBool ? a.b : a.i;
      const int64_t q = b.kind == Value::Kind::kBool ? b.b : b.i;
      return p < q ? -1 : p > q ? 1 : 0;
    }
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (a.is_string() && b.is_string()) return a.s < b.s ? -1 : a.s > b.s ? 1 : 0;
  if (a.is_list() && b.is_list()) {
    for (size_t i = 0; i < std::min(a.list->size(), b.list->size()); ++i) {
      if (!Equal((*a.list)[i], (*b.list)[i])) return Compare((*a.list)[i], (*b.list)[i]);
    }
    return a.list->size() < b.list->size() ? -1 : a.list->size() > b.list->size() ? 1 : 0;
  }
  throw RenderError("TypeError: '<' not supported between instances of '" + TypeName(a) +
                    "' and '" + TypeName(b) + "'");
}

std::string ToJson(const Value& v, int indent, const std::string& item_sep,
                   const std::string& key_sep, bool sort_keys) {
  std::string out;
  JsonValue(v, indent, 0, item_sep, key_sep, sort_keys, &out);
  return out;
}

std::vector<std::string> CodePoints(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    uint32_t cp;
    const size_t n = Utf8At(s, i, &cp);
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

}  // namespace kvmesh::jinja::internal
