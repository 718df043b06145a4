// StreamingDetokenizer: turns a stream of generated token ids into text,
// handing out only complete UTF-8 characters.
//
// A character can span tokens (an emoji spelled as four <0xF0>.. byte tokens,
// a CJK character split across byte-level BPE tokens). Feed() returns the
// text completed so far and holds back a trailing partial character until
// the tokens that finish it arrive; Flush() ends the stream, turning a
// partial character left over into U+FFFD. Bytes that can never form a
// character are replaced by U+FFFD as soon as that is certain, so every
// returned string is valid UTF-8.
//
// The text is the concatenation of Tokenizer::TokenToPiece, as llama.cpp's
// server streams it. With `strip_leading_space` the first token also loses
// one leading space when the vocabulary adds a space prefix, as in
// llama_detokenize; then, for pieces that form valid UTF-8, the outputs add
// up to Tokenizer::Decode(ids, /*remove_special=*/false, render_special)
// minus Decode's clean_spaces tidying (" ," -> ","), which llama.cpp does not
// apply while streaming either.
//
// One instance per stream; not thread-safe. The tokenizer must outlive it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace kvmesh {

class StreamingDetokenizer {
 public:
  struct Options {
    bool render_special = false;       // show control tokens' text
    bool strip_leading_space = false;  // llama_detokenize's first-token rule
    // Control tokens shown even without render_special (a chat format's
    // markers, such as [TOOL_CALLS], that the router parses).
    std::vector<int32_t> shown_special = {};
  };

  StreamingDetokenizer(const Tokenizer& tokenizer, Options options);

  // Appends one token; returns the newly completed text (possibly empty).
  std::string Feed(int32_t id);
  // Ends the stream: returns what is held back, a partial character as U+FFFD.
  std::string Flush();
  // Starts a new stream.
  void Reset();

 private:
  const Tokenizer& tokenizer_;
  const Options options_;
  bool first_token_ = true;
  std::string pending_;  // bytes of an incomplete trailing character
};

}  // namespace kvmesh
