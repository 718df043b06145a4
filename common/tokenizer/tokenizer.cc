#include "common/tokenizer/tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "common/tokenizer/encoders.h"
#include "common/tokenizer/pre_tokenizer.h"
#include "common/tokenizer/unicode.h"
#include "common/tokenizer/vocab.h"

namespace kvmesh {
namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's space

std::string ReplaceAll(std::string_view text, std::string_view from, std::string_view to) {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0;;) {
    const size_t hit = text.find(from, pos);
    out.append(text.substr(pos, hit - pos));
    if (hit == std::string_view::npos) return out;
    out.append(to);
    pos = hit + from.size();
  }
}

// C's isspace in the "C" locale.
bool IsAsciiSpace(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }

// Byte-level BPE spelling -> bytes. A code point outside the byte map is
// kept visible the way llama.cpp shows it.
std::string DecodeByteLevel(const std::string& text) {
  std::string out;
  for (uint32_t cp : unicode::DecodeUtf8(text)) {
    if (const auto byte = unicode::UnicodeToByte(cp)) {
      out.push_back(static_cast<char>(*byte));
      continue;
    }
    out += "[UNK_BYTE_0x";
    for (unsigned char c : unicode::EncodeUtf8(cp)) {
      char hex[3];
      std::snprintf(hex, sizeof(hex), "%02x", c);
      out += hex;
    }
    out += text + "]";
  }
  return out;
}

// The byte a "<0xAB>" token stands for (llama.cpp reads two hex digits at
// offset 3 with strtol).
char ByteOfToken(const std::string& text) {
  const std::string digits = text.size() > 3 ? text.substr(3, 2) : std::string();
  return static_cast<char>(std::strtol(digits.c_str(), nullptr, 16));
}

// llama_detokenize's clean-up of tokenization spaces, pass for pass and in
// place, as llama.cpp does it (the passes feed each other).
void CleanUpSpaces(std::string* s) {
  std::string& t = *s;
  size_t total = t.size();

  const size_t n1 = total;  // " ?", " !", " .", " ,"
  total = n1 ? 1 : 0;
  for (size_t i = 1; i < n1; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && (x == '?' || x == '!' || x == '.' || x == ',')) --total;
    t[total++] = x;
  }

  const size_t n2 = total;  // " ' " -> "'"
  total = n2 ? 1 : 0;
  for (size_t i = 1; i < n2; ++i) {
    const char x = t[i];
    if (x == '\'' && i + 1 < n2 && t[i - 1] == ' ' && t[i + 1] == ' ') {
      --total;
      t[++i] = '\0';
    }
    t[total++] = x;
  }

  const size_t n3 = total;  // " 's", " 'm", " 're", " 've"
  total = n3 ? 1 : 0;
  for (size_t i = 1; i < n3; ++i) {
    const char x = t[i];
    if (t[i - 1] == ' ' && x == '\'' && i + 1 < n3) {
      const char x1 = t[i + 1];
      if (x1 == 's' || x1 == 'm') {
        --total;
      } else if (x1 != 't' && x1 != 'd' && i + 2 < n3) {
        const char x2 = t[i + 2];
        if ((x1 == 'r' && x2 == 'e') || (x1 == 'v' && x2 == 'e')) --total;
      }
    }
    t[total++] = x;
  }
  t.resize(total);
}

constexpr uint32_t kMatchedInText = kTokenAttrControl | kTokenAttrUserDefined | kTokenAttrUnknown;

}  // namespace

// A stretch of the input: either plain text or one special token.
struct Tokenizer::Fragment {
  int32_t token;  // kNoToken for text
  size_t begin;
  size_t length;
};

Tokenizer::Tokenizer(TokenizerConfig config) : config_(std::move(config)) {}
Tokenizer::~Tokenizer() = default;

StatusOr<std::unique_ptr<Tokenizer>> Tokenizer::Create(TokenizerConfig config) {
  RETURN_IF_ERROR(ValidateTokenizerConfig(config));
  std::unique_ptr<Tokenizer> tokenizer(new Tokenizer(std::move(config)));
  RETURN_IF_ERROR(tokenizer->Init());
  return tokenizer;
}

Status Tokenizer::Init() {
  const int32_t n = config_.n_vocab();
  vocab_ = std::make_unique<Vocab>(config_);
  for (int32_t id = 0; id < n; ++id) {
    if (vocab_->Find(config_.tokens[id]) != id) {
      return InvalidArgumentError(
          "tokenizer config: token \"" + config_.tokens[id] + "\" appears twice (ids " +
          std::to_string(vocab_->Find(config_.tokens[id])) + " and " + std::to_string(id) + ")");
    }
  }
  if (config_.model == TokenizerModel::kBpe) {
    ASSIGN_OR_RETURN(std::unique_ptr<PreTokenizer> pre, PreTokenizer::Create(config_.pre));
    bpe_ = std::make_unique<BpeEncoder>(*vocab_, config_, std::move(pre));
  }

  // Longest first. Ties keep whatever order std::sort leaves them in, which
  // is what llama.cpp's identical call does.
  for (int32_t id = 0; id < n; ++id) {
    if (config_.token_attrs[id] & kMatchedInText) special_tokens_.push_back(id);
  }
  std::sort(special_tokens_.begin(), special_tokens_.end(), [&](int32_t a, int32_t b) {
    return config_.tokens[a].size() > config_.tokens[b].size();
  });

  pieces_.reserve(n);
  for (int32_t id = 0; id < n; ++id) pieces_.push_back(ComputePiece(id));
  is_eog_.assign(n, false);
  for (int32_t id : config_.eog_ids) is_eog_[id] = true;

  switch (config_.model) {
    case TokenizerModel::kSpm:
      linefeed_id_ = vocab_->ByteFallbackToken('\n');
      if (linefeed_id_ == kNoToken) linefeed_id_ = config_.pad_id;
      break;
    case TokenizerModel::kBpe: {
      const std::vector<int32_t> ids = Encode("\n", false, false);
      linefeed_id_ = ids.empty() ? config_.pad_id : ids[0];
      break;
    }
    case TokenizerModel::kWpm:
      linefeed_id_ = config_.pad_id;
      break;
  }
  return Status::Ok();
}

std::vector<Tokenizer::Fragment> Tokenizer::SplitOnSpecialTokens(std::string_view text,
                                                                 bool parse_special) const {
  std::vector<Fragment> fragments = {{kNoToken, 0, text.size()}};
  std::vector<Fragment> next;
  for (int32_t special : special_tokens_) {
    const uint32_t attrs = config_.token_attrs[special];
    if (!parse_special && (attrs & (kTokenAttrControl | kTokenAttrUnknown))) continue;
    const std::string& special_text = config_.tokens[special];
    next.clear();
    for (const Fragment& fragment : fragments) {
      if (fragment.token != kNoToken) {
        next.push_back(fragment);
        continue;
      }
      size_t begin = fragment.begin;
      size_t length = fragment.length;
      while (length > 0) {
        const size_t match = text.substr(0, begin + length).find(special_text, begin);
        if (match == std::string_view::npos) {
          next.push_back({kNoToken, begin, length});
          break;
        }
        size_t left = match - begin;
        if (attrs & kTokenAttrLstrip) {
          while (left > 0 && IsAsciiSpace(text[begin + left - 1])) --left;
        }
        if (left > 0) next.push_back({kNoToken, begin, left});
        next.push_back({special, match, special_text.size()});
        size_t right_begin = match + special_text.size();
        size_t right = begin + length - right_begin;
        if (attrs & kTokenAttrRstrip) {
          while (right > 0 && IsAsciiSpace(text[right_begin])) {
            ++right_begin;
            --right;
          }
        }
        begin = right_begin;
        length = right;
      }
    }
    fragments.swap(next);
  }
  return fragments;
}

void Tokenizer::EncodeText(std::string_view text, bool prefix_space,
                           std::vector<int32_t>* out) const {
  switch (config_.model) {
    case TokenizerModel::kSpm: {
      std::string spelled = prefix_space ? " " : "";
      spelled.append(text);
      EncodeSpm(*vocab_, ReplaceAll(spelled, " ", kSpaceMarker), config_.unk_id, out);
      return;
    }
    case TokenizerModel::kBpe:
      if (config_.escape_whitespaces) {
        bpe_->Encode(ReplaceAll(text, " ", kSpaceMarker), out);
      } else {
        bpe_->Encode(text, out);
      }
      return;
    case TokenizerModel::kWpm:
      EncodeWpm(*vocab_, config_, text, out);
      return;
  }
}

std::vector<int32_t> Tokenizer::Encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  const bool is_wpm = config_.model == TokenizerModel::kWpm;
  // WordPiece always frames with [CLS] ... [SEP] when asked for specials.
  if (add_special && (config_.add_bos || is_wpm) && config_.bos_id != kNoToken) {
    out.push_back(config_.bos_id);
  }
  if (!text.empty()) {
    // SPM puts a space before text that starts the input or follows a
    // special token.
    bool after_special = true;
    for (const Fragment& fragment : SplitOnSpecialTokens(text, parse_special)) {
      if (fragment.token != kNoToken) {
        out.push_back(fragment.token);
        after_special = true;
        continue;
      }
      const bool prefix_space =
          config_.model == TokenizerModel::kSpm && config_.add_space_prefix && after_special;
      EncodeText(text.substr(fragment.begin, fragment.length), prefix_space, &out);
      after_special = false;
    }
  }
  if (add_special) {
    if (is_wpm) {
      if (config_.sep_id != kNoToken) out.push_back(config_.sep_id);
    } else if (config_.add_eos && config_.eos_id != kNoToken) {
      out.push_back(config_.eos_id);
    }
  }
  return out;
}

std::string Tokenizer::ComputePiece(int32_t id) const {
  const uint32_t attrs = config_.token_attrs[id];
  const std::string& text = config_.tokens[id];
  if (attrs & (kTokenAttrUnknown | kTokenAttrControl | kTokenAttrUserDefined)) return text;
  if (attrs & kTokenAttrNormal) {
    if (config_.model == TokenizerModel::kBpe && !config_.escape_whitespaces) {
      return DecodeByteLevel(text);
    }
    return ReplaceAll(text, kSpaceMarker, " ");
  }
  if (attrs & kTokenAttrByte) return std::string(1, ByteOfToken(text));
  return "";  // unused and undefined tokens have no text
}

std::string Tokenizer::TokenToPiece(int32_t id, bool render_special) const {
  if (!InVocab(id)) return "";
  if (!render_special && (config_.token_attrs[id] & (kTokenAttrUnknown | kTokenAttrControl))) {
    return "";
  }
  return pieces_[id];
}

std::string Tokenizer::Decode(std::span<const int32_t> ids, bool remove_special,
                              bool render_special) const {
  bool strip_space = config_.add_space_prefix;
  if (remove_special && config_.add_bos && !ids.empty() && ids.front() == config_.bos_id) {
    strip_space = false;
    ids = ids.subspan(1);
  }
  if (remove_special && config_.add_eos && !ids.empty() && ids.back() == config_.eos_id) {
    ids = ids.subspan(0, ids.size() - 1);
  }
  std::string text;
  for (int32_t id : ids) {
    const std::string piece = TokenToPiece(id, render_special);
    const bool strip = strip_space && !piece.empty() && piece[0] == ' ';
    text.append(piece, strip ? 1 : 0);
    strip_space = false;
  }
  if (config_.clean_spaces) CleanUpSpaces(&text);
  return text;
}

bool Tokenizer::IsEndOfGeneration(int32_t id) const { return InVocab(id) && is_eog_[id]; }

bool Tokenizer::IsControl(int32_t id) const {
  return InVocab(id) && (config_.token_attrs[id] & kTokenAttrControl);
}

uint32_t Tokenizer::TokenAttributes(int32_t id) const {
  return InVocab(id) ? config_.token_attrs[id] : 0;
}

std::string_view Tokenizer::TokenText(int32_t id) const {
  return InVocab(id) ? std::string_view(config_.tokens[id]) : std::string_view();
}

}  // namespace kvmesh
