#include "common/tokenizer/vocab.h"

#include <algorithm>

namespace kvmesh {

Vocab::Vocab(const TokenizerConfig& config) : config_(config) {
  ids_.reserve(config.tokens.size());
  for (int32_t id = 0; id < config.n_vocab(); ++id) {
    const std::string& text = config.tokens[id];
    ids_.emplace(text, id);
    max_token_length_ = std::max(max_token_length_, text.size());
  }
}

int32_t Vocab::ByteFallbackToken(uint8_t byte) const {
  static constexpr char kHex[] = "0123456789ABCDEF";
  const char spelled[6] = {'<', '0', 'x', kHex[byte >> 4], kHex[byte & 15], '>'};
  const int32_t id = Find(std::string_view(spelled, sizeof(spelled)));
  if (id != kNoToken) return id;
  const char raw = static_cast<char>(byte);
  return Find(std::string_view(&raw, 1));
}

}  // namespace kvmesh
