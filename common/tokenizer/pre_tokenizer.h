// PreTokenizer: splits text into the words byte-level BPE merges within, as
// llama.cpp's unicode_regex_split does for a given `tokenizer.ggml.pre`.
//
// A pre-tokenizer is a list of stages, each refining the previous split. The
// GPT-2, Llama 3 and Qwen2 regexes run as hand-written scanners
// (word_splitters.h); the others run on PCRE2 the way llama.cpp runs them on
// std::regex:
//   * a regex using \p{...} classes sees "collapsed" text, one byte per code
//     point: ASCII as itself, other whitespace as \v, and any other code
//     point as one byte per class (0xD1 number, 0xD2 letter, 0xD3
//     punctuation, 0xD4 mark, 0xD5 symbol, 0xD0 anything else); \p{L}
//     becomes [\xD2A-Za-z] and so on;
//   * a regex without \p{...} sees the code points, non-ASCII whitespace
//     replaced by \v, and \s means ASCII whitespace only.
// Both keep llama.cpp's own Unicode classes (unicode.h) in charge instead of
// PCRE2's, which is what makes token ids match.
//
// Immutable after Create(); Split() may run on many threads at once.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kvmesh {

class PreTokenizer {
 public:
  // `pre` is a tokenizer.ggml.pre value of a BPE vocabulary ("" = "default").
  // Unknown names are InvalidArgument, listing the supported ones.
  static StatusOr<std::unique_ptr<PreTokenizer>> Create(std::string_view pre);
  // Every name Create() accepts, comma separated (for messages).
  static std::string SupportedNames();

  ~PreTokenizer();
  PreTokenizer(const PreTokenizer&) = delete;
  PreTokenizer& operator=(const PreTokenizer&) = delete;

  // The words of `text`, in order, UTF-8 encoded (not yet byte-level
  // encoded). Malformed UTF-8 has been replaced by U+FFFD, byte by byte.
  std::vector<std::string> Split(std::string_view text) const;

 private:
  struct Stage;
  PreTokenizer();

  std::vector<std::unique_ptr<Stage>> stages_;
};

}  // namespace kvmesh
