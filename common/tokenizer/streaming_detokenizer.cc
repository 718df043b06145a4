#include "common/tokenizer/streaming_detokenizer.h"

#include <algorithm>
#include <utility>

#include "common/tokenizer/unicode.h"

namespace kvmesh {

StreamingDetokenizer::StreamingDetokenizer(const Tokenizer& tokenizer, Options options)
    : tokenizer_(tokenizer), options_(std::move(options)) {}

std::string StreamingDetokenizer::Feed(int32_t id) {
  const bool shown = options_.render_special ||
                     std::find(options_.shown_special.begin(), options_.shown_special.end(), id) !=
                         options_.shown_special.end();
  std::string piece = tokenizer_.TokenToPiece(id, shown);
  if (first_token_ && options_.strip_leading_space && tokenizer_.config().add_space_prefix &&
      !piece.empty() && piece[0] == ' ') {
    piece.erase(0, 1);
  }
  first_token_ = false;
  pending_ += piece;

  std::string out;
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const int length = unicode::NextUtf8Sequence(rest);
    if (length == 0) break;  // a character still waiting for its remaining bytes
    if (length > 0) {
      out.append(rest.substr(0, length));
      rest.remove_prefix(length);
    } else {
      unicode::AppendUtf8(unicode::kReplacementCharacter, &out);
      rest.remove_prefix(-length);
    }
  }
  pending_.erase(0, pending_.size() - rest.size());
  return out;
}

std::string StreamingDetokenizer::Flush() {
  std::string out;
  unicode::AppendSanitizedUtf8(pending_, &out);
  pending_.clear();
  first_token_ = true;
  return out;
}

void StreamingDetokenizer::Reset() {
  pending_.clear();
  first_token_ = true;
}

}  // namespace kvmesh
