// WordPiece, as llama.cpp's llm_tokenizer_wpm. The GGUF vocabulary spells
// word-initial pieces with a leading U+2581 and continuation pieces bare
// (BERT's "##" removed by the converter).

#include <algorithm>

#include "common/tokenizer/encoders.h"
#include "common/tokenizer/unicode.h"

namespace kvmesh {
namespace {

constexpr std::string_view kWordStart = "\xE2\x96\x81";  // U+2581

// BERT's CJK ranges, including its 0x2B920 for Extension E (Unicode says
// 0x2B820).
bool IsChineseCharacter(uint32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

// BERT's basic tokenizer: drop controls (and accents), lower-case, split on
// whitespace, and make each punctuation mark and CJK character its own word.
std::vector<std::string> SplitWords(const TokenizerConfig& config, std::string_view text) {
  std::vector<std::string> words(1);
  for (uint32_t cp : unicode::DecodeUtf8(text)) {
    if (config.strip_accents) cp = unicode::DecompositionFirst(cp);
    const uint8_t cls = unicode::ClassOf(cp);
    if (unicode::IsWhitespace(cp)) {
      if (!words.back().empty()) words.emplace_back();
      continue;
    }
    if (cp == 0 || cp == unicode::kReplacementCharacter || (cls & unicode::kControl)) continue;
    if (config.strip_accents && (cls & unicode::kMark)) continue;
    const std::string spelled = unicode::EncodeUtf8(config.lowercase ? unicode::ToLower(cp) : cp);
    if ((cls & unicode::kPunctuation) || (cp < 0x7F && (cls & unicode::kSymbol)) ||
        IsChineseCharacter(cp)) {
      if (!words.back().empty()) words.emplace_back();
      words.back() = spelled;
      words.emplace_back();
    } else {
      words.back() += spelled;
    }
  }
  if (words.back().empty()) words.pop_back();
  return words;
}

}  // namespace

void EncodeWpm(const Vocab& vocab, const TokenizerConfig& config, std::string_view text,
               std::vector<int32_t>* out) {
  const size_t max_length = vocab.max_token_length();
  for (const std::string& word : SplitWords(config, text)) {
    const std::string marked = std::string(kWordStart) + word;
    const size_t n = marked.size();
    const size_t before = out->size();
    // Greedy longest match, by bytes; one unknown stretch discards the word.
    for (size_t i = 0; i < n;) {
      size_t end = std::min(n, i + max_length + 1);
      for (; end > i; --end) {
        const int32_t id = vocab.Find(std::string_view(marked).substr(i, end - i));
        if (id != kNoToken) {
          out->push_back(id);
          break;
        }
      }
      if (end == i) {
        out->resize(before);
        break;
      }
      i = end;
    }
    if (out->size() == before && config.unk_id != kNoToken) out->push_back(config.unk_id);
  }
}

}  // namespace kvmesh
