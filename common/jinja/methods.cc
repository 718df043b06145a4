// The Jinja engine's methods of str, list and dict, as templates call them
// (`s.split()`, `d.get(k)`, ...), following Python; the sandbox refuses the
// mutating ones.
#include <algorithm>
#include <cmath>
#include <set>

#include "common/jinja/interpreter.h"

namespace kvmesh::jinja::internal {

using Kind = Value::Kind;

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

namespace {
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

Value StrList(const std::vector<std::string>& parts) {
  Value v = Value::MakeList();
  for (const std::string& p : parts) v.list->push_back(Value::Str(p));
  return v;
}

}  // namespace

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

Value Interpreter::CallMethod(const Value& self, const std::string& name, Args& a) {
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
      return Value::Str(Replace(s, ToStr(*from), ToStr(*to), count ? ToInt(*count, "count") : -1));
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

std::string Interpreter::Format(const std::string& fmt, const Args& a) {
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

}  // namespace kvmesh::jinja::internal
