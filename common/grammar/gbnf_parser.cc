// GBNF text → Grammar (grammar.h describes the syntax).
#include <algorithm>
#include <optional>
#include <utility>

#include "common/grammar/grammar.h"

namespace kvmesh::grammar {
namespace {

using Sequence = std::vector<Element>;

constexpr int kMaxNesting = 128;
constexpr int kMaxRepeat = 10000;

bool IsWordChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  Status ParseAll() {
    SkipSpace(/*newlines=*/true);
    while (pos_ < text_.size()) {
      RETURN_IF_ERROR(ParseRule());
      SkipSpace(true);
    }
    return Status::Ok();
  }

  Grammar::Builder& builder() { return builder_; }

 private:
  Status Error(std::string_view what) const {
    int line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return InvalidArgumentError("grammar: line " + std::to_string(line) + ", column " +
                                std::to_string(column) + ": " + std::string(what));
  }

  bool AtEnd() const { return pos_ >= text_.size(); }
  char Peek() const { return AtEnd() ? '\0' : text_[pos_]; }

  // Skips blanks and comments; newlines only when `newlines` (a rule's body
  // may continue on the next line after |, ( or inside groups).
  void SkipSpace(bool newlines) {
    while (!AtEnd()) {
      const char c = text_[pos_];
      if (c == '#') {
        while (!AtEnd() && text_[pos_] != '\n') ++pos_;
      } else if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else {
        break;
      }
    }
  }

  std::string_view Name() {
    const size_t start = pos_;
    while (!AtEnd() && IsWordChar(text_[pos_])) ++pos_;
    return text_.substr(start, pos_ - start);
  }

  Status ParseRule() {
    const std::string_view name = Name();
    if (name.empty()) return Error("expected a rule name");
    SkipSpace(false);
    if (text_.substr(pos_, 3) != "::=") return Error("expected ::= after rule name");
    pos_ += 3;
    const int32_t rule = builder_.Rule(name);
    if (builder_.defined(rule)) return Error("rule \"" + std::string(name) + "\" is defined twice");
    RETURN_IF_ERROR(ParseAlternatives(rule, 0));
    SkipSpace(false);
    if (!AtEnd() && Peek() != '\n') return Error("unexpected character after rule body");
    return Status::Ok();
  }

  // alternatives ::= sequence ("|" sequence)*, into `rule`.
  Status ParseAlternatives(int32_t rule, int depth) {
    if (depth > kMaxNesting) return Error("groups nested too deeply");
    for (;;) {
      Sequence seq;
      RETURN_IF_ERROR(ParseSequence(&seq, depth));
      builder_.AddAlternative(rule, std::move(seq));
      SkipSpace(depth > 0);
      if (Peek() != '|') return Status::Ok();
      ++pos_;
      SkipSpace(true);
    }
  }

  Status ParseSequence(Sequence* seq, int depth) {
    for (;;) {
      SkipSpace(depth > 0);
      const char c = Peek();
      if (AtEnd() || c == '|' || c == ')' || c == '\n') return Status::Ok();
      Sequence item;
      if (c == '"') {
        RETURN_IF_ERROR(ParseLiteral(&item));
      } else if (c == '[') {
        RETURN_IF_ERROR(ParseClass(&item));
      } else if (c == '.') {
        ++pos_;
        item.push_back(ClassRule({{0, 0x10FFFF}}, "any"));
      } else if (c == '(') {
        ++pos_;
        SkipSpace(true);
        const int32_t group = builder_.NewRule("group");
        RETURN_IF_ERROR(ParseAlternatives(group, depth + 1));
        SkipSpace(true);
        if (Peek() != ')') return Error("expected )");
        ++pos_;
        item.push_back({Element::Type::kRule, group});
      } else if (IsWordChar(c)) {
        const std::string_view name = Name();
        SkipSpace(false);
        if (text_.substr(pos_, 3) == "::=")
          return Error("missing newline before rule " + std::string(name));
        item.push_back({Element::Type::kRule, builder_.Rule(name)});
      } else {
        return Error(std::string("unexpected character '") + c + "'");
      }
      RETURN_IF_ERROR(ParsePostfix(std::move(item), seq));
    }
  }

  // An item followed by *, +, ?, {m}, {m,} or {m,n}.
  Status ParsePostfix(Sequence item, Sequence* seq) {
    const char c = Peek();
    int min = 1, max = 1;
    if (c == '*' || c == '+' || c == '?') {
      ++pos_;
      min = c == '+' ? 1 : 0;
      max = c == '?' ? 1 : -1;
    } else if (c == '{') {
      ++pos_;
      auto number = [&]() -> std::optional<int> {
        size_t start = pos_;
        long v = 0;
        while (!AtEnd() && Peek() >= '0' && Peek() <= '9') {
          v = v * 10 + (text_[pos_++] - '0');
          if (v > kMaxRepeat) return std::nullopt;
        }
        if (pos_ == start) return std::nullopt;
        return static_cast<int>(v);
      };
      SkipSpace(false);
      auto m = number();
      if (!m) return Error("expected a repetition count (at most 10000)");
      min = max = *m;
      SkipSpace(false);
      if (Peek() == ',') {
        ++pos_;
        SkipSpace(false);
        if (Peek() == '}') {
          max = -1;
        } else {
          auto n = number();
          if (!n || *n < min) return Error("bad repetition bound");
          max = *n;
        }
      }
      SkipSpace(false);
      if (Peek() != '}') return Error("expected }");
      ++pos_;
    } else {
      seq->insert(seq->end(), item.begin(), item.end());
      return Status::Ok();
    }
    // Wrap a multi-element item in a rule so it repeats as one.
    Element unit = item.size() == 1 ? item[0] : Element{Element::Type::kRule, 0};
    if (item.size() != 1) {
      const int32_t r = builder_.NewRule("item");
      builder_.AddAlternative(r, item);
      unit = {Element::Type::kRule, r};
    }
    for (int i = 0; i < min; ++i) seq->push_back(unit);
    if (max < 0) {  // star ::= unit star | ε
      const int32_t star = builder_.NewRule("star");
      builder_.AddAlternative(star, {unit, {Element::Type::kRule, star}});
      builder_.AddAlternative(star, {});
      seq->push_back({Element::Type::kRule, star});
    } else if (max > min) {  // opt_k ::= unit opt_{k-1} | ε, nested
      int32_t tail = -1;
      for (int i = 0; i < max - min; ++i) {
        const int32_t opt = builder_.NewRule("opt");
        Sequence body = {unit};
        if (tail >= 0) body.push_back({Element::Type::kRule, tail});
        builder_.AddAlternative(opt, std::move(body));
        builder_.AddAlternative(opt, {});
        tail = opt;
      }
      seq->push_back({Element::Type::kRule, tail});
    }
    return Status::Ok();
  }

  // One escaped or plain code point of a literal or class.
  StatusOr<uint32_t> CodePoint() {
    if (AtEnd()) return Error("unterminated literal");
    const unsigned char c = static_cast<unsigned char>(text_[pos_]);
    if (c != '\\') {
      // Decode UTF-8 so class ranges work on code points.
      int n = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
      if (pos_ + n > text_.size()) return Error("invalid UTF-8");
      uint32_t cp = n == 1 ? c : c & (0x3F >> (n - 1));
      for (int i = 1; i < n; ++i) {
        const unsigned char b = static_cast<unsigned char>(text_[pos_ + i]);
        if ((b & 0xC0) != 0x80) return Error("invalid UTF-8");
        cp = (cp << 6) | (b & 0x3F);
      }
      pos_ += n;
      return cp;
    }
    ++pos_;
    if (AtEnd()) return Error("unterminated escape");
    const char e = text_[pos_++];
    auto hex = [&](int digits) -> StatusOr<uint32_t> {
      uint32_t v = 0;
      for (int i = 0; i < digits; ++i) {
        if (AtEnd()) return Error("short hex escape");
        const char h = text_[pos_++];
        int d = h >= '0' && h <= '9'   ? h - '0'
                : h >= 'a' && h <= 'f' ? h - 'a' + 10
                : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                       : -1;
        if (d < 0) return Error("bad hex digit in escape");
        v = v * 16 + static_cast<uint32_t>(d);
      }
      return v;
    };
    switch (e) {
      case 'n':
        return uint32_t{'\n'};
      case 'r':
        return uint32_t{'\r'};
      case 't':
        return uint32_t{'\t'};
      case 'x':
        return hex(2);
      case 'u':
        return hex(4);
      case 'U':
        return hex(8);
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
        return static_cast<uint32_t>(static_cast<unsigned char>(e));
      default:
        return Error(std::string("unknown escape \\") + e);
    }
  }

  // A literal: one byte element per byte of its UTF-8 text.
  Status ParseLiteral(Sequence* out) {
    ++pos_;  // the opening quote
    while (!AtEnd() && Peek() != '"') {
      const bool escaped = Peek() == '\\';
      const size_t start = pos_;
      ASSIGN_OR_RETURN(uint32_t cp, CodePoint());
      std::string bytes;
      if (!escaped) {
        bytes = std::string(text_.substr(start, pos_ - start));
      } else if (cp < 0x100 && text_[start + 1] == 'x') {
        bytes.push_back(static_cast<char>(cp));  // \xHH is a byte
      } else {
        for (const auto& seq : Utf8Sequences(cp, cp)) {
          for (const auto& [lo, hi] : seq) bytes.push_back(static_cast<char>(lo));
        }
      }
      for (unsigned char b : bytes) {
        ByteSet set;
        set.set(b);
        out->push_back({Element::Type::kBytes, builder_.ByteSetId(set)});
      }
    }
    if (AtEnd()) return Error("unterminated string literal");
    ++pos_;
    if (out->empty()) {  // "" matches nothing: an empty rule
      const int32_t r = builder_.NewRule("empty");
      builder_.AddAlternative(r, {});
      out->push_back({Element::Type::kRule, r});
    }
    return Status::Ok();
  }

  Status ParseClass(Sequence* out) {
    ++pos_;  // [
    bool negated = false;
    if (Peek() == '^') {
      negated = true;
      ++pos_;
    }
    std::vector<std::pair<uint32_t, uint32_t>> ranges;
    while (!AtEnd() && Peek() != ']') {
      ASSIGN_OR_RETURN(uint32_t lo, CodePoint());
      uint32_t hi = lo;
      if (Peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
        ++pos_;
        ASSIGN_OR_RETURN(hi, CodePoint());
        if (hi < lo) return Error("character range is backwards");
      }
      ranges.emplace_back(lo, hi);
    }
    if (AtEnd()) return Error("unterminated character class");
    ++pos_;
    if (negated) ranges = Complement(std::move(ranges));
    if (ranges.empty()) return Error("the character class matches nothing");
    out->push_back(ClassRule(ranges, "class"));
    return Status::Ok();
  }

  static std::vector<std::pair<uint32_t, uint32_t>> Complement(
      std::vector<std::pair<uint32_t, uint32_t>> ranges) {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> out;
    uint32_t next = 0;
    for (const auto& [lo, hi] : ranges) {
      if (lo > next) out.emplace_back(next, lo - 1);
      next = std::max(next, hi + 1);
    }
    if (next <= 0x10FFFF) out.emplace_back(next, 0x10FFFF);
    return out;
  }

 public:
  // A rule matching one code point of `ranges`: single bytes merged into
  // one set, longer sequences as alternatives of byte sets.
  Element ClassRule(const std::vector<std::pair<uint32_t, uint32_t>>& ranges,
                    std::string_view base) {
    ByteSet ascii;
    std::vector<Sequence> longer;
    for (const auto& [lo, hi] : ranges) {
      for (const auto& seq : Utf8Sequences(lo, hi)) {
        if (seq.size() == 1) {
          for (int b = seq[0].first; b <= seq[0].second; ++b) ascii.set(b);
          continue;
        }
        Sequence s;
        for (const auto& [a, b] : seq) {
          ByteSet set;
          for (int x = a; x <= b; ++x) set.set(x);
          s.push_back({Element::Type::kBytes, builder_.ByteSetId(set)});
        }
        longer.push_back(std::move(s));
      }
    }
    if (longer.empty() && ascii.any()) return {Element::Type::kBytes, builder_.ByteSetId(ascii)};
    const int32_t r = builder_.NewRule(base);
    if (ascii.any())
      builder_.AddAlternative(r, {{Element::Type::kBytes, builder_.ByteSetId(ascii)}});
    for (Sequence& s : longer) builder_.AddAlternative(r, std::move(s));
    return {Element::Type::kRule, r};
  }

 private:
  std::string_view text_;
  size_t pos_ = 0;
  Grammar::Builder builder_;
};

}  // namespace

StatusOr<Grammar> Grammar::ParseGbnf(std::string_view text) {
  Parser parser(text);
  RETURN_IF_ERROR(parser.ParseAll());
  return std::move(parser.builder()).Build("root");
}

}  // namespace kvmesh::grammar
