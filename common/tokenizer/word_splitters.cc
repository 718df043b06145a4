#include "common/tokenizer/word_splitters.h"

#include "common/tokenizer/unicode.h"

namespace kvmesh {
namespace {

// Class bits plus a whitespace bit; 0 means "past the end of the fragment",
// which no alternative matches (the scanners' stand-in for a lookahead that
// hits the end).
constexpr uint16_t kWhitespaceBit = 0x100;

uint16_t Traits(uint32_t cp) {
  return unicode::ClassOf(cp) | (unicode::IsWhitespace(cp) ? kWhitespaceBit : 0);
}

// One fragment being scanned: cps[begin, end) with bounds-checked accessors.
class Scan {
 public:
  Scan(const std::vector<uint32_t>& cps, const std::vector<uint16_t>& traits, size_t begin,
       size_t end, std::vector<size_t>* words)
      : cps_(cps), traits_(traits), end_(end), word_start_(begin), words_(words) {}

  static constexpr uint32_t kNone = 0xFFFFFFFF;

  uint32_t cp(size_t pos) const { return pos < end_ ? cps_[pos] : kNone; }
  uint16_t traits(size_t pos) const { return pos < end_ ? traits_[pos] : 0; }
  bool letter(size_t pos) const { return traits(pos) & unicode::kLetter; }
  bool number(size_t pos) const { return traits(pos) & unicode::kNumber; }
  bool space(size_t pos) const { return traits(pos) & kWhitespaceBit; }
  // In range and neither whitespace, letter nor number: [^\s\p{L}\p{N}].
  bool other(size_t pos) const {
    const uint16_t t = traits(pos);
    return t != 0 && !(t & (kWhitespaceBit | unicode::kLetter | unicode::kNumber));
  }
  size_t end() const { return end_; }

  // Ends the current word at `pos` (no-op for an empty word).
  void EndWordAt(size_t pos) {
    if (pos > word_start_) words_->push_back(pos - word_start_);
    word_start_ = pos;
  }

  // Whitespace run at `pos`: returns the position the rules
  // \s*[\r\n]+ (when `newline_rule`), \s+(?!\S) and \s+ end the word at, or
  // `pos` when there is no whitespace.
  size_t WhitespaceEnd(size_t pos, bool newline_rule) const {
    size_t run = 0;
    size_t after_last_newline = 0;
    while (space(pos + run)) {
      const uint32_t c = cp(pos + run);
      if (c == '\r' || c == '\n') after_last_newline = pos + run + 1;
      ++run;
    }
    if (newline_rule && after_last_newline > 0) return after_last_newline;
    // \s+(?!\S): leave the last space to prefix the next word, unless the
    // run ends the fragment.
    if (run > 1 && pos + run < end_) return pos + run - 1;
    return pos + run;
  }

 private:
  const std::vector<uint32_t>& cps_;
  const std::vector<uint16_t>& traits_;
  const size_t end_;
  size_t word_start_;
  std::vector<size_t>* words_;
};

// 's 't 'm 'd (length 2) or 're 've 'll (length 3) at `pos`, or 0.
size_t ContractionLength(const Scan& s, size_t pos, bool ignore_case) {
  if (s.cp(pos) != '\'' || pos + 1 >= s.end()) return 0;
  auto fold = [&](uint32_t c) { return ignore_case && c != Scan::kNone ? unicode::ToLower(c) : c; };
  const uint32_t c1 = fold(s.cp(pos + 1));
  if (c1 == 's' || c1 == 't' || c1 == 'm' || c1 == 'd') return 2;
  if (pos + 2 >= s.end()) return 0;
  const uint32_t c2 = fold(s.cp(pos + 2));
  if ((c1 == 'r' && c2 == 'e') || (c1 == 'v' && c2 == 'e') || (c1 == 'l' && c2 == 'l')) return 3;
  return 0;
}

template <typename ScanFragment>
void ForEachFragment(const std::vector<uint32_t>& cps, const std::vector<size_t>& fragments,
                     std::vector<size_t>* words, ScanFragment scan_fragment) {
  std::vector<uint16_t> traits(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) traits[i] = Traits(cps[i]);
  size_t begin = 0;
  for (size_t length : fragments) {
    Scan scan(cps, traits, begin, begin + length, words);
    scan_fragment(scan, begin);
    begin += length;
  }
}

}  // namespace

void SplitGpt2Words(const std::vector<uint32_t>& cps, const std::vector<size_t>& fragments,
                    std::vector<size_t>* words) {
  ForEachFragment(cps, fragments, words, [](Scan& s, size_t pos) {
    while (pos < s.end()) {
      if (size_t n = ContractionLength(s, pos, /*ignore_case=*/false)) {
        pos += n;
        s.EndWordAt(pos);
        continue;
      }
      // " ?X+" for X in letters, numbers, other: an optional leading space.
      const size_t body = pos + (s.cp(pos) == ' ' ? 1 : 0);
      if (s.letter(body)) {
        pos = body;
        while (s.letter(pos)) ++pos;
      } else if (s.number(body)) {
        pos = body;
        while (s.number(pos)) ++pos;
      } else if (s.other(body)) {
        pos = body;
        while (s.other(pos)) ++pos;
      } else {
        const size_t ws_end = s.WhitespaceEnd(pos, /*newline_rule=*/false);
        pos = ws_end > pos ? ws_end : pos + 1;  // a lone unmatched character
      }
      s.EndWordAt(pos);
    }
  });
}

void SplitLlama3Words(const std::vector<uint32_t>& cps, const std::vector<size_t>& fragments,
                      size_t max_digits, std::vector<size_t>* words) {
  ForEachFragment(cps, fragments, words, [max_digits](Scan& s, size_t pos) {
    while (pos < s.end()) {
      const uint32_t c = s.cp(pos);
      if (size_t n = ContractionLength(s, pos, /*ignore_case=*/true)) {
        pos += n;
        s.EndWordAt(pos);
        continue;
      }
      // [^\r\n\p{L}\p{N}]?\p{L}+
      if (c != '\r' && c != '\n' && !s.number(pos) && (s.letter(pos) || s.letter(pos + 1))) {
        ++pos;
        while (s.letter(pos)) ++pos;
        s.EndWordAt(pos);
        continue;
      }
      // \p{N}{1,max_digits}
      if (s.number(pos)) {
        size_t group_start = pos;
        while (s.number(pos)) {
          if (++pos - group_start >= max_digits) {
            s.EndWordAt(pos);
            group_start = pos;
          }
        }
        s.EndWordAt(pos);
        continue;
      }
      // " ?[^\s\p{L}\p{N}]+[\r\n]*". llama.cpp enters this rule when the
      // character after an optional space is "other" or past the end, so a
      // fragment-final space is a word here as well.
      const size_t body = pos + (c == ' ' ? 1 : 0);
      if (s.other(body) || s.traits(body) == 0) {
        pos = body;
        while (s.other(pos)) ++pos;
        while (s.cp(pos) == '\r' || s.cp(pos) == '\n') ++pos;
        s.EndWordAt(pos);
        continue;
      }
      const size_t ws_end = s.WhitespaceEnd(pos, /*newline_rule=*/true);
      pos = ws_end > pos ? ws_end : pos + 1;  // a lone unmatched character
      s.EndWordAt(pos);
    }
  });
}

}  // namespace kvmesh
