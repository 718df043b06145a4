#include "common/tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>
#include <optional>

#include "common/tokenizer/pre_tokenizer_names.h"
#include "common/tokenizer/unicode.h"
#include "common/tokenizer/word_splitters.h"

namespace kvmesh {
namespace {

// Deepseek LLM's letter class: the cased letters (Lu, Ll, Lt) of the Unicode
// version its tokenizer was made with, as written in its tokenizer.json.
constexpr std::string_view kDeepseekLlmLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";
constexpr std::string_view kDeepseekLlmPunctuation =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";
// CJK ideographs, U+0800..U+4E00 and Hangul, as Deepseek writes them.
constexpr std::string_view kDeepseekCjk =
    R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

// How llama.cpp rewrites \p{...} for collapsed text: the class's stand-in
// byte plus the ASCII members of the class.
struct CollapsedClass {
  std::string_view name;
  std::string_view stand_in;
  std::string_view ascii;
};
constexpr std::string_view kLetterAscii = "A-Za-z";
constexpr std::array<CollapsedClass, 10> kCollapsedClasses = {{
    {R"(\p{N})", R"(\xD1)", "0-9"},
    {R"(\p{L})", R"(\xD2)", kLetterAscii},
    {R"(\p{P})", R"(\xD3)", R"(!-#%-*,-/:-;?-@\[-\]_\{\})"},
    {R"(\p{M})", R"(\xD4)", ""},
    {R"(\p{S})", R"(\xD5)", R"(\$\+<->^`\|~)"},
    {R"(\p{Lu})", R"(\xD2)", kLetterAscii},
    {R"(\p{Ll})", R"(\xD2)", kLetterAscii},
    {R"(\p{Lt})", R"(\xD2)", kLetterAscii},
    {R"(\p{Lm})", R"(\xD2)", kLetterAscii},
    {R"(\p{Lo})", R"(\xD2)", kLetterAscii},
}};

bool UsesClasses(std::string_view pattern) {
  for (const CollapsedClass& c : kCollapsedClasses) {
    if (pattern.find(c.name) != std::string_view::npos) return true;
  }
  return false;
}

// Rewrites each \p{...} into a character class over collapsed text, inside or
// outside an existing [...], as llama.cpp does.
std::string CollapsePattern(std::string_view pattern) {
  std::string out;
  bool inside_class = false;
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == '[' && (i == 0 || pattern[i - 1] != '\\')) {
      out += '[';
      inside_class = true;
      continue;
    }
    if (inside_class && c == ']' && pattern[i - 1] != '\\') {
      out += ']';
      inside_class = false;
      continue;
    }
    if (c == '\\' && i + 3 < pattern.size() && pattern[i + 1] == 'p' && pattern[i + 2] == '{') {
      const size_t close = pattern.find('}', i + 3);
      if (close != std::string_view::npos && close <= i + 10) {
        const std::string_view name = pattern.substr(i, close - i + 1);
        for (const CollapsedClass& cls : kCollapsedClasses) {
          if (cls.name != name) continue;
          if (!inside_class) out += '[';
          out += cls.stand_in;
          out += cls.ascii;
          if (!inside_class) out += ']';
          i = close;
          break;
        }
        if (i == close) continue;
      }
    }
    out += c;
  }
  return out;
}

uint8_t CollapsedByte(uint32_t cp) {
  if (cp < 0x80) return static_cast<uint8_t>(cp);
  if (unicode::IsWhitespace(cp)) return 0x0B;
  switch (unicode::ClassOf(cp)) {
    case unicode::kNumber:
      return 0xD1;
    case unicode::kLetter:
      return 0xD2;
    case unicode::kPunctuation:
      return 0xD3;
    case unicode::kMark:
      return 0xD4;
    case unicode::kSymbol:
      return 0xD5;
    default:
      return 0xD0;
  }
}

struct CodeDeleter {
  void operator()(pcre2_code* code) const { pcre2_code_free(code); }
};
struct MatchDataDeleter {
  void operator()(pcre2_match_data* data) const { pcre2_match_data_free(data); }
};
using CodePtr = std::unique_ptr<pcre2_code, CodeDeleter>;
using MatchDataPtr = std::unique_ptr<pcre2_match_data, MatchDataDeleter>;

// The text as a regex stage sees it, built on first use by Split().
struct Subjects {
  const std::vector<uint32_t>& cps;
  std::optional<std::string> collapsed;  // one byte per code point
  std::optional<std::string> wide;       // UTF-8; byte_of[cp index] locates code points
  std::vector<size_t> byte_of;
  std::vector<uint32_t> cp_of;  // byte offset -> code point index, at boundaries

  const std::string& Collapsed() {
    if (!collapsed) {
      collapsed.emplace(cps.size(), '\0');
      for (size_t i = 0; i < cps.size(); ++i) (*collapsed)[i] = CollapsedByte(cps[i]);
    }
    return *collapsed;
  }

  const std::string& Wide() {
    if (!wide) {
      wide.emplace();
      byte_of.resize(cps.size() + 1);
      for (size_t i = 0; i < cps.size(); ++i) {
        byte_of[i] = wide->size();
        uint32_t cp = cps[i];
        if (cp > 0x7F && unicode::IsWhitespace(cp)) cp = 0x0B;
        // PCRE2 needs valid UTF-8; no pattern class contains a surrogate.
        if (cp >= 0xD800 && cp <= 0xDFFF) cp = unicode::kReplacementCharacter;
        unicode::AppendUtf8(cp, &*wide);
      }
      byte_of[cps.size()] = wide->size();
      cp_of.assign(wide->size() + 1, 0);
      for (size_t i = 0; i <= cps.size(); ++i) cp_of[byte_of[i]] = static_cast<uint32_t>(i);
    }
    return *wide;
  }
};

}  // namespace

struct PreTokenizer::Stage {
  enum class Kind { kGpt2, kLlama3, kQwen2, kRegex };
  Kind kind = Kind::kRegex;
  bool collapsed = false;  // regex over collapsed text (else over code points)
  CodePtr code;

  // Refines `fragments` (code point lengths) by this stage.
  std::vector<size_t> Apply(Subjects& subjects, const std::vector<size_t>& fragments) const {
    std::vector<size_t> out;
    out.reserve(fragments.size());
    switch (kind) {
      case Kind::kGpt2:
        SplitGpt2Words(subjects.cps, fragments, &out);
        return out;
      case Kind::kLlama3:
        SplitLlama3Words(subjects.cps, fragments, 3, &out);
        return out;
      case Kind::kQwen2:
        SplitLlama3Words(subjects.cps, fragments, 1, &out);
        return out;
      case Kind::kRegex:
        break;
    }
    const std::string& subject = collapsed ? subjects.Collapsed() : subjects.Wide();
    auto byte_at = [&](size_t cp_index) {
      return collapsed ? cp_index : subjects.byte_of[cp_index];
    };
    auto cp_at = [&](size_t byte) { return collapsed ? byte : subjects.cp_of[byte]; };
    MatchDataPtr match(pcre2_match_data_create_from_pattern(code.get(), nullptr));
    const auto* data = reinterpret_cast<PCRE2_SPTR>(subject.data());
    const uint32_t options = collapsed ? 0 : PCRE2_NO_UTF_CHECK;
    size_t begin = 0;
    for (size_t length : fragments) {
      const size_t end_byte = byte_at(begin + length);
      size_t last = byte_at(begin);  // end of the previous match
      size_t search = last;
      // The subject ends at the fragment's end, as in llama.cpp, so $ and
      // lookaheads cannot see the next fragment.
      while (search < end_byte &&
             pcre2_match(code.get(), data, end_byte, search, options, match.get(), nullptr) > 0) {
        const PCRE2_SIZE* ovector = pcre2_get_ovector_pointer(match.get());
        const size_t match_begin = ovector[0];
        const size_t match_end = ovector[1];
        if (match_end == match_begin) {  // none of the patterns matches empty; be safe
          search = byte_at(cp_at(match_begin) + 1);
          continue;
        }
        if (match_begin > last) out.push_back(cp_at(match_begin) - cp_at(last));
        out.push_back(cp_at(match_end) - cp_at(match_begin));
        last = search = match_end;
      }
      if (last < end_byte) out.push_back(cp_at(end_byte) - cp_at(last));
      begin += length;
    }
    return out;
  }
};

PreTokenizer::PreTokenizer() = default;
PreTokenizer::~PreTokenizer() = default;

std::string PreTokenizer::SupportedNames() { return SupportedPreTokenizerNames(); }

StatusOr<std::unique_ptr<PreTokenizer>> PreTokenizer::Create(std::string_view pre) {
  const PreTokenizerTraits* traits = FindPreTokenizer(pre.empty() ? "default" : pre);
  if (traits == nullptr) {
    return InvalidArgumentError("unsupported pre-tokenizer \"" + std::string(pre) +
                                "\" (supported: " + SupportedNames() + ")");
  }
  std::unique_ptr<PreTokenizer> result(new PreTokenizer());
  using Kind = Stage::Kind;
  auto add_scanner = [&](Kind kind) {
    auto stage = std::make_unique<Stage>();
    stage->kind = kind;
    result->stages_.push_back(std::move(stage));
  };
  Status error;
  auto add_regex = [&](std::string_view pattern) {
    auto stage = std::make_unique<Stage>();
    stage->collapsed = UsesClasses(pattern);
    const std::string source = stage->collapsed ? CollapsePattern(pattern) : std::string(pattern);
    // $ means the end of the fragment only, as in ECMAScript.
    uint32_t options = PCRE2_DOLLAR_ENDONLY;
    // Code point mode needs UTF for \x{...} but not UCP: llama.cpp's \s is
    // std::wregex's in the C locale, ASCII only (non-ASCII whitespace was
    // replaced by \v above), while PCRE2_UCP's \s would also take U+180E.
    // Collapsed text is bytes, where PCRE2's default tables are exactly the
    // C locale's.
    if (!stage->collapsed) options |= PCRE2_UTF;
    int error_code = 0;
    PCRE2_SIZE error_offset = 0;
    stage->code.reset(pcre2_compile(reinterpret_cast<PCRE2_SPTR>(source.data()), source.size(),
                                    options, &error_code, &error_offset, nullptr));
    if (!stage->code) {
      PCRE2_UCHAR message[256];
      pcre2_get_error_message(error_code, message, sizeof(message));
      error = InternalError("pre-tokenizer \"" + std::string(pre) + "\": cannot compile regex " +
                            source + " at offset " + std::to_string(error_offset) + ": " +
                            reinterpret_cast<const char*>(message));
      return;
    }
    pcre2_jit_compile(stage->code.get(), PCRE2_JIT_COMPLETE);  // interpreter if JIT is absent
    result->stages_.push_back(std::move(stage));
  };
  constexpr std::string_view kGpt2Digits = R"(\p{N}+)";
  switch (traits->family) {
    case PreTokenizerFamily::kDefault:
      add_regex(R"([\p{P}\$\+<=>\^~\|]+)");
      add_scanner(Kind::kGpt2);
      add_regex(kGpt2Digits);
      add_regex("[0-9][0-9][0-9]");
      break;
    case PreTokenizerFamily::kGpt2:
      add_scanner(Kind::kGpt2);
      break;
    case PreTokenizerFamily::kLlama3:
      add_scanner(Kind::kLlama3);
      break;
    case PreTokenizerFamily::kQwen2:
      add_scanner(Kind::kQwen2);
      break;
    case PreTokenizerFamily::kStarcoder:
      add_regex(R"(\p{N})");
      add_scanner(Kind::kGpt2);
      break;
    case PreTokenizerFamily::kFalcon:
      add_regex(R"([\p{P}\$\+<=>\^~\|`]+)");
      add_scanner(Kind::kGpt2);
      add_regex("[0-9][0-9][0-9]");
      break;
    case PreTokenizerFamily::kDeepseekLlm:
      add_regex(R"([\r\n])");
      add_regex(kDeepseekLlmLetters);
      add_regex(kDeepseekLlmPunctuation);
      add_regex(R"(\s+$)");
      add_regex(kDeepseekCjk);
      add_regex(kGpt2Digits);
      break;
    case PreTokenizerFamily::kDeepseekCoder:
      add_regex(R"([\r\n])");
      add_regex(R"(\s?\p{L}+)");
      add_regex(R"(\s?\p{P}+)");
      add_regex(kDeepseekCjk);
      add_regex(R"(\p{N})");
      break;
  }
  if (!error.ok()) return error;
  return result;
}

std::vector<std::string> PreTokenizer::Split(std::string_view text) const {
  const std::vector<uint32_t> cps = unicode::DecodeUtf8(text);
  if (cps.empty()) return {};
  Subjects subjects{cps, std::nullopt, std::nullopt, {}, {}};
  std::vector<size_t> fragments = {cps.size()};
  for (const auto& stage : stages_) fragments = stage->Apply(subjects, fragments);

  std::vector<std::string> words;
  words.reserve(fragments.size());
  size_t begin = 0;
  for (size_t length : fragments) {
    std::string& word = words.emplace_back();
    for (size_t i = begin; i < begin + length; ++i) unicode::AppendUtf8(cps[i], &word);
    begin += length;
  }
  return words;
}

}  // namespace kvmesh
