#include "common/grammar/grammar.h"

#include <functional>

namespace kvmesh::grammar {

int32_t Grammar::Builder::Rule(std::string_view name) {
  auto [it, added] = index_.emplace(std::string(name), static_cast<int32_t>(names_.size()));
  if (!added) return it->second;
  names_.emplace_back(name);
  defined_.push_back(false);
  alternatives_.emplace_back();
  return static_cast<int32_t>(names_.size() - 1);
}

int32_t Grammar::Builder::NewRule(std::string_view base) {
  std::string name(base);
  name += '-';
  name += std::to_string(names_.size());
  return Rule(name);
}

int32_t Grammar::Builder::ByteSetId(const ByteSet& set) {
  for (size_t i = 0; i < byte_sets_.size(); ++i) {
    if (byte_sets_[i] == set) return static_cast<int32_t>(i);
  }
  byte_sets_.push_back(set);
  return static_cast<int32_t>(byte_sets_.size() - 1);
}

void Grammar::Builder::AddAlternative(int32_t rule, std::vector<Element> sequence) {
  defined_[rule] = true;
  alternatives_[rule].push_back(std::move(sequence));
}

StatusOr<Grammar> Grammar::Builder::Build(std::string_view root) && {
  const int32_t n = num_rules();
  int32_t root_id = -1;
  for (int32_t r = 0; r < n; ++r) {
    if (names_[r] == root) root_id = r;
    if (!defined_[r]) {
      return InvalidArgumentError("grammar: rule \"" + names_[r] + "\" is used but not defined");
    }
  }
  if (root_id < 0) {
    return InvalidArgumentError("grammar: no \"" + std::string(root) + "\" rule to start from");
  }
  // Nullable rules (those that can match nothing), to a fixed point.
  std::vector<bool> nullable(n, false);
  for (bool changed = true; changed;) {
    changed = false;
    for (int32_t r = 0; r < n; ++r) {
      if (nullable[r]) continue;
      for (const auto& alt : alternatives_[r]) {
        bool all = true;
        for (const Element& e : alt) {
          if (e.type == Element::Type::kBytes || !nullable[e.value]) {
            all = false;
            break;
          }
        }
        if (all) {
          nullable[r] = true;
          changed = true;
          break;
        }
      }
    }
  }
  // Left recursion: a rule reachable from itself through leftmost rules
  // with nullable rules before them.
  std::vector<std::vector<int32_t>> left(n);
  for (int32_t r = 0; r < n; ++r) {
    for (const auto& alt : alternatives_[r]) {
      for (const Element& e : alt) {
        if (e.type == Element::Type::kBytes) break;
        left[r].push_back(e.value);
        if (!nullable[e.value]) break;
      }
    }
  }
  std::vector<int> color(n, 0);  // 0 new, 1 on the path, 2 done
  std::string cycle;
  std::function<bool(int32_t)> visit = [&](int32_t r) {
    color[r] = 1;
    for (int32_t next : left[r]) {
      if (color[next] == 1) {
        cycle = names_[next];
        return true;
      }
      if (color[next] == 0 && visit(next)) return true;
    }
    color[r] = 2;
    return false;
  };
  for (int32_t r = 0; r < n; ++r) {
    if (color[r] == 0 && visit(r)) {
      return InvalidArgumentError(
          "grammar: rule \"" + cycle +
          "\" is left-recursive (it can start with itself, directly or by repeating something "
          "that can match nothing, as in (\"a\"?)*); rewrite it with repetition of something "
          "that is never empty, e.g. x ::= y (\",\" y)*");
    }
  }
  Grammar g;
  g.byte_sets_ = std::move(byte_sets_);
  g.rule_names_ = std::move(names_);
  g.root_ = root_id;
  g.rules_.resize(n);
  for (int32_t r = 0; r < n; ++r) {
    for (auto& alt : alternatives_[r]) {
      g.rules_[r].push_back(static_cast<int32_t>(g.elements_.size()));
      g.elements_.insert(g.elements_.end(), alt.begin(), alt.end());
      g.elements_.push_back({Element::Type::kEnd, 0});
    }
  }
  return g;
}

namespace {

int Utf8Length(uint32_t cp) {
  if (cp < 0x80) return 1;
  if (cp < 0x800) return 2;
  if (cp < 0x10000) return 3;
  return 4;
}

void Encode(uint32_t cp, uint8_t* out, int n) {
  if (n == 1) {
    out[0] = static_cast<uint8_t>(cp);
    return;
  }
  for (int i = n - 1; i > 0; --i) {
    out[i] = static_cast<uint8_t>(0x80 | (cp & 0x3F));
    cp >>= 6;
  }
  static constexpr uint8_t kLead[] = {0, 0, 0xC0, 0xE0, 0xF0};
  out[0] = static_cast<uint8_t>(kLead[n] | cp);
}

// [lo, hi] with every code point of one UTF-8 length.
void SameLength(uint32_t lo, uint32_t hi,
                std::vector<std::vector<std::pair<uint8_t, uint8_t>>>* out) {
  const int n = Utf8Length(lo);
  for (int i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        SameLength(lo, lo | m, out);
        SameLength((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        SameLength(lo, (hi & ~m) - 1, out);
        SameLength(hi & ~m, hi, out);
        return;
      }
    }
  }
  uint8_t a[4], b[4];
  Encode(lo, a, n);
  Encode(hi, b, n);
  std::vector<std::pair<uint8_t, uint8_t>> seq;
  for (int i = 0; i < n; ++i) seq.emplace_back(a[i], b[i]);
  out->push_back(std::move(seq));
}

}  // namespace

std::vector<std::vector<std::pair<uint8_t, uint8_t>>> Utf8Sequences(uint32_t lo, uint32_t hi) {
  std::vector<std::vector<std::pair<uint8_t, uint8_t>>> out;
  hi = std::min<uint32_t>(hi, 0x10FFFF);
  static constexpr uint32_t kBounds[] = {0x7F, 0x7FF, 0xFFFF, 0x10FFFF};
  while (lo <= hi) {
    if (lo >= 0xD800 && lo <= 0xDFFF) {  // surrogates are not characters
      lo = 0xE000;
      continue;
    }
    uint32_t end = hi;
    for (uint32_t bound : kBounds) {
      if (lo <= bound) {
        end = std::min(end, bound);
        break;
      }
    }
    if (lo < 0xD800 && end >= 0xD800) end = 0xD7FF;
    SameLength(lo, end, &out);
    if (end == 0x10FFFF) break;
    lo = end + 1;
  }
  return out;
}

std::string GbnfLiteral(std::string_view text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789ABCDEF";
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  out += '"';
  return out;
}

}  // namespace kvmesh::grammar
