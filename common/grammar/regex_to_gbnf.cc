// Regular expressions → GBNF (json_schema.h describes the subset).
#include <algorithm>
#include <utility>
#include <vector>

#include "common/grammar/grammar.h"
#include "common/grammar/json_schema.h"

namespace kvmesh::grammar {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

Ranges Normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& [lo, hi] : r) {
    if (!out.empty() && lo <= out.back().second + 1) {
      out.back().second = std::max(out.back().second, hi);
    } else {
      out.emplace_back(lo, hi);
    }
  }
  return out;
}

Ranges Complement(const Ranges& in) {
  Ranges out;
  uint32_t next = 0;
  for (const auto& [lo, hi] : Normalized(in)) {
    if (lo > next) out.emplace_back(next, lo - 1);
    next = hi + 1;
  }
  if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
  return out;
}

Ranges Subtract(const Ranges& a, const Ranges& b) {
  // a ∩ ¬b
  const Ranges not_b = Complement(b);
  Ranges out;
  for (const auto& [lo, hi] : Normalized(a)) {
    for (const auto& [blo, bhi] : not_b) {
      const uint32_t l = std::max(lo, blo), h = std::min(hi, bhi);
      if (l <= h) out.emplace_back(l, h);
    }
  }
  return out;
}

// What a JSON string must not hold raw: controls, the quote, the backslash.
const Ranges kJsonEscaped = {{0, 0x1F}, {0x22, 0x22}, {0x5C, 0x5C}};

std::string ClassCodePoint(uint32_t cp) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  if (cp >= 0x20 && cp < 0x7F && cp != ']' && cp != '\\' && cp != '^' && cp != '-' && cp != '"') {
    return std::string(1, static_cast<char>(cp));
  }
  std::string out = cp > 0xFFFF ? "\\U" : "\\u";
  const int digits = cp > 0xFFFF ? 8 : 4;
  for (int i = digits - 1; i >= 0; --i) out += kHex[(cp >> (4 * i)) & 15];
  return out;
}

std::string ClassText(const Ranges& ranges) {
  std::string out = "[";
  for (const auto& [lo, hi] : Normalized(ranges)) {
    out += ClassCodePoint(lo);
    if (hi != lo) {
      out += '-';
      out += ClassCodePoint(hi);
    }
  }
  out += ']';
  return out;
}

std::string Utf8(uint32_t cp) {
  std::string out;
  for (const auto& seq : Utf8Sequences(cp, cp)) {
    for (const auto& [lo, hi] : seq) out.push_back(static_cast<char>(lo));
  }
  return out;
}

class RegexConverter {
 public:
  RegexConverter(std::string_view pattern, bool json) : p_(pattern), json_(json) {}

  StatusOr<std::string> Convert() {
    bool start_anchor = false, end_anchor = false;
    std::string_view body = p_;
    if (!body.empty() && body.front() == '^') {
      start_anchor = true;
      body.remove_prefix(1);
    }
    if (!body.empty() && body.back() == '$' && (body.size() < 2 || body[body.size() - 2] != '\\')) {
      end_anchor = true;
      body.remove_suffix(1);
    }
    p_ = body;
    ASSIGN_OR_RETURN(std::string expr, Alternation(0));
    if (i_ < p_.size()) return Error("unbalanced )");
    const std::string any = "(" + CharClass(Complement({{'\n', '\n'}})) + ")*";
    std::string out;
    if (!start_anchor) out += any + " ";
    out += expr;
    if (!end_anchor) out += " " + any;
    return out;
  }

 private:
  Status Error(std::string_view what) const {
    return InvalidArgumentError("pattern \"" + std::string(p_) + "\": " + std::string(what) +
                                " (at offset " + std::to_string(i_) + ")");
  }

  // A class, with JSON's escaped characters taken out in a JSON string.
  std::string CharClass(const Ranges& ranges) const {
    const Ranges r = json_ ? Subtract(ranges, kJsonEscaped) : Normalized(ranges);
    if (r.empty()) return "\"\\x00\"";  // unreachable in practice; never matches in JSON
    return ClassText(r);
  }

  // One code point as the text writes it (escaped in a JSON string).
  std::string Literal(uint32_t cp) const {
    if (json_) {
      if (cp == '"') return GbnfLiteral("\\\"");
      if (cp == '\\') return GbnfLiteral("\\\\");
      if (cp == '\n') return GbnfLiteral("\\n");
      if (cp == '\t') return GbnfLiteral("\\t");
      if (cp == '\r') return GbnfLiteral("\\r");
      if (cp < 0x20) {
        static constexpr char kHex[] = "0123456789abcdef";
        std::string e = "\\u00";
        e += kHex[cp >> 4];
        e += kHex[cp & 15];
        return GbnfLiteral(e);
      }
    }
    return GbnfLiteral(Utf8(cp));
  }

  StatusOr<uint32_t> NextCodePoint() {
    const unsigned char c = static_cast<unsigned char>(p_[i_]);
    const int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    if (i_ + n > p_.size()) return Error("invalid UTF-8");
    uint32_t cp = n == 1 ? c : c & (0x3F >> (n - 1));
    for (int k = 1; k < n; ++k) cp = (cp << 6) | (static_cast<unsigned char>(p_[i_ + k]) & 0x3F);
    i_ += n;
    return cp;
  }

  // After a backslash: a class (\d …) or one code point.
  StatusOr<std::pair<Ranges, bool>> Escape() {
    if (i_ >= p_.size()) return Error("trailing backslash");
    const char e = p_[i_++];
    const Ranges digit = {{'0', '9'}}, word = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}},
                 space = {{'\t', '\r'}, {' ', ' '}};
    switch (e) {
      case 'd':
        return std::make_pair(digit, true);
      case 'w':
        return std::make_pair(word, true);
      case 's':
        return std::make_pair(space, true);
      case 'D':
        return std::make_pair(Complement(digit), true);
      case 'W':
        return std::make_pair(Complement(word), true);
      case 'S':
        return std::make_pair(Complement(space), true);
      case 'n':
        return std::make_pair(Ranges{{'\n', '\n'}}, false);
      case 't':
        return std::make_pair(Ranges{{'\t', '\t'}}, false);
      case 'r':
        return std::make_pair(Ranges{{'\r', '\r'}}, false);
      case 'u': {
        if (i_ + 4 > p_.size()) return Error("short \\u escape");
        uint32_t v = 0;
        for (int k = 0; k < 4; ++k) {
          const char h = p_[i_++];
          const int d = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
          if (d < 0) return Error("bad \\u escape");
          v = v * 16 + static_cast<uint32_t>(d);
        }
        return std::make_pair(Ranges{{v, v}}, false);
      }
      default:
        if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '0' && e <= '9')) {
          return Error(std::string("\\") + e + " is not supported");
        }
        return std::make_pair(Ranges{{static_cast<uint32_t>(static_cast<unsigned char>(e)),
                                      static_cast<uint32_t>(static_cast<unsigned char>(e))}},
                              false);
    }
  }

  StatusOr<std::string> Alternation(int depth) {
    if (depth > 64) return Error("groups nested too deeply");
    std::vector<std::string> branches;
    for (;;) {
      ASSIGN_OR_RETURN(std::string seq, Sequence(depth));
      branches.push_back(seq.empty() ? "\"\"" : seq);
      if (i_ < p_.size() && p_[i_] == '|') {
        ++i_;
        continue;
      }
      break;
    }
    if (branches.size() == 1) return "(" + branches[0] + ")";
    std::string out = "(";
    for (size_t k = 0; k < branches.size(); ++k) out += (k ? " | " : "") + branches[k];
    return out + ")";
  }

  StatusOr<std::string> Sequence(int depth) {
    std::string out;
    while (i_ < p_.size() && p_[i_] != '|' && p_[i_] != ')') {
      ASSIGN_OR_RETURN(std::string atom, Atom(depth));
      ASSIGN_OR_RETURN(std::string quantified, Quantifier(std::move(atom)));
      if (!out.empty()) out += ' ';
      out += quantified;
    }
    return out;
  }

  StatusOr<std::string> Atom(int depth) {
    const char c = p_[i_];
    if (c == '(') {
      ++i_;
      if (p_.substr(i_, 2) == "?:") {
        i_ += 2;
      } else if (i_ < p_.size() && p_[i_] == '?') {
        return Error("lookaround and named groups are not supported");
      }
      ASSIGN_OR_RETURN(std::string inner, Alternation(depth + 1));
      if (i_ >= p_.size() || p_[i_] != ')') return Error("missing )");
      ++i_;
      return inner;
    }
    if (c == '[') return Class();
    if (c == '.') {
      ++i_;
      return CharClass(Complement({{'\n', '\n'}}));
    }
    if (c == '^' || c == '$') return Error("anchors are supported only at the ends");
    if (c == '*' || c == '+' || c == '?' || c == '{') return Error("nothing to repeat");
    if (c == '\\') {
      ++i_;
      ASSIGN_OR_RETURN(auto escaped, Escape());
      if (escaped.second || escaped.first.size() != 1 ||
          escaped.first[0].first != escaped.first[0].second) {
        return CharClass(escaped.first);
      }
      return Literal(escaped.first[0].first);
    }
    ASSIGN_OR_RETURN(uint32_t cp, NextCodePoint());
    return Literal(cp);
  }

  StatusOr<std::string> Class() {
    ++i_;  // [
    bool negated = false;
    if (i_ < p_.size() && p_[i_] == '^') {
      negated = true;
      ++i_;
    }
    Ranges ranges;
    bool first = true;
    while (i_ < p_.size() && (p_[i_] != ']' || first)) {
      first = false;
      Ranges item;
      bool is_set = false;
      if (p_[i_] == '\\') {
        ++i_;
        ASSIGN_OR_RETURN(auto escaped, Escape());
        item = escaped.first;
        is_set = escaped.second;
      } else {
        ASSIGN_OR_RETURN(uint32_t cp, NextCodePoint());
        item = {{cp, cp}};
      }
      if (!is_set && i_ + 1 < p_.size() && p_[i_] == '-' && p_[i_ + 1] != ']') {
        ++i_;
        uint32_t hi;
        if (p_[i_] == '\\') {
          ++i_;
          ASSIGN_OR_RETURN(auto escaped, Escape());
          if (escaped.second) return Error("a class range cannot end in a class");
          hi = escaped.first[0].first;
        } else {
          ASSIGN_OR_RETURN(hi, NextCodePoint());
        }
        if (hi < item[0].first) return Error("class range is backwards");
        item = {{item[0].first, hi}};
      }
      ranges.insert(ranges.end(), item.begin(), item.end());
    }
    if (i_ >= p_.size()) return Error("missing ]");
    ++i_;
    if (negated) ranges = Complement(ranges);
    return CharClass(ranges);
  }

  StatusOr<std::string> Quantifier(std::string atom) {
    if (i_ >= p_.size()) return atom;
    const char c = p_[i_];
    std::string out;
    if (c == '*' || c == '+' || c == '?') {
      ++i_;
      out = atom + c;
    } else if (c == '{') {
      const size_t close = p_.find('}', i_);
      if (close == std::string_view::npos) return Error("missing }");
      std::string bounds(p_.substr(i_ + 1, close - i_ - 1));
      if (bounds.empty() || bounds.find_first_not_of("0123456789,") != std::string::npos ||
          bounds.front() == ',') {
        return Error("bad {m,n} quantifier");
      }
      i_ = close + 1;
      out = atom + "{" + bounds + "}";
    } else {
      return atom;
    }
    if (i_ < p_.size() && p_[i_] == '?') ++i_;  // lazy: same language
    if (i_ < p_.size() && (p_[i_] == '*' || p_[i_] == '+' || p_[i_] == '{')) {
      return Error("a quantifier cannot follow a quantifier");
    }
    return out;
  }

  std::string_view p_;
  bool json_;
  size_t i_ = 0;
};

}  // namespace

// The expression only, for json_schema.cc; checked by compiling it, so
// what the matcher cannot take (a repetition of something that can match
// nothing, such as (a*)*) is an error naming the pattern.
StatusOr<std::string> RegexExpression(std::string_view pattern, bool json_string) {
  RegexConverter converter(pattern, json_string);
  ASSIGN_OR_RETURN(std::string expr, converter.Convert());
  if (auto compiled = Grammar::ParseGbnf("root ::= " + expr + "\n"); !compiled.ok()) {
    return InvalidArgumentError("pattern \"" + std::string(pattern) +
                                "\": repeats something that can match nothing (as in (a*)*), "
                                "which is not supported");
  }
  return expr;
}

StatusOr<std::string> RegexToGbnf(std::string_view pattern, bool json_string) {
  ASSIGN_OR_RETURN(std::string expr, RegexExpression(pattern, json_string));
  return "root ::= " + expr + "\n";
}

}  // namespace kvmesh::grammar
