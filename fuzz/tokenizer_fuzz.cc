// libFuzzer target: every tokenizer of ../shared/vocab (SPM, byte-level BPE
// with each pre-tokenizer, WordPiece) on arbitrary bytes. The first byte
// picks the tokenizer; the rest is encoded as text, with and without special tokens, and read as a
// list of token ids (little-endian int32), in and out of the vocabulary, that are decoded whole and
// streamed. Besides crashes and sanitizer reports, these are findings:
//   - Encode returns an id outside the vocabulary;
//   - StreamingDetokenizer returns text that is not UTF-8;
//   - the streamed text differs from Decode where streaming_detokenizer.h
//     says they agree (Decode's text is UTF-8, no clean_spaces).
// The vocabularies are loaded once (LLVMFuzzerInitialize); see fuzz_vocab.h.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/tokenizer/streaming_detokenizer.h"
#include "common/tokenizer/tokenizer.h"
#include "common/tokenizer/unicode.h"
#include "fuzz/fuzz_vocab.h"

namespace {

using kvmesh::StreamingDetokenizer;
using kvmesh::Tokenizer;
using kvmesh::fuzz::NamedTokenizer;

// Per-token queries look at this many ids of an input; whole-sequence
// decoding sees them all.
constexpr size_t kMaxQueriedIds = 64;

const std::vector<NamedTokenizer>& Tokenizers() {
  static const auto* tokenizers =
      new std::vector<NamedTokenizer>(kvmesh::fuzz::LoadTokenizers(kvmesh::fuzz::VocabDir()));
  return *tokenizers;
}

[[noreturn]] void Fail(const NamedTokenizer& t, const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", t.name.c_str(), what.c_str());
  std::abort();
}

bool IsUtf8(std::string_view text) {
  while (!text.empty()) {
    const int length = kvmesh::unicode::NextUtf8Sequence(text);
    if (length <= 0) return false;
    text.remove_prefix(static_cast<size_t>(length));
  }
  return true;
}

// The ids fed one by one, then flushed; every piece returned must be UTF-8.
std::string Stream(const NamedTokenizer& t, std::span<const int32_t> ids,
                   StreamingDetokenizer::Options options) {
  StreamingDetokenizer detokenizer(*t.tokenizer, std::move(options));
  std::string text;
  for (int32_t id : ids) {
    const std::string piece = detokenizer.Feed(id);
    if (!IsUtf8(piece)) {
      Fail(t, "StreamingDetokenizer::Feed(" + std::to_string(id) + ") is not UTF-8");
    }
    text += piece;
  }
  const std::string rest = detokenizer.Flush();
  if (!IsUtf8(rest)) Fail(t, "StreamingDetokenizer::Flush() is not UTF-8");
  return text + rest;
}

// Streams `ids` as the worker does (first piece loses the prefix space) and
// holds the result to Decode's where the two are documented to agree.
void StreamAndCompare(const NamedTokenizer& t, std::span<const int32_t> ids, bool render_special) {
  const std::string streamed =
      Stream(t, ids, {.render_special = render_special, .strip_leading_space = true});
  const std::string decoded = t.tokenizer->Decode(ids, /*remove_special=*/false, render_special);
  if (t.tokenizer->config().clean_spaces || !IsUtf8(decoded)) return;
  if (streamed != decoded) {
    Fail(t, "streamed text \"" + streamed + "\" differs from Decode's \"" + decoded + "\"" +
                (render_special ? " (render_special)" : ""));
  }
}

void EncodeText(const NamedTokenizer& t, std::string_view text) {
  const Tokenizer& tokenizer = *t.tokenizer;
  for (const bool special : {false, true}) {
    const std::vector<int32_t> ids =
        tokenizer.Encode(text, /*add_special=*/special, /*parse_special=*/special);
    for (int32_t id : ids) {
      if (id < 0 || id >= tokenizer.n_vocab()) {
        Fail(t, "Encode returned id " + std::to_string(id) + " outside 0.." +
                    std::to_string(tokenizer.n_vocab() - 1));
      }
    }
    (void)tokenizer.Decode(ids, /*remove_special=*/special, /*render_special=*/special);
    StreamAndCompare(t, ids, /*render_special=*/special);
  }
}

// Raw ids are mostly far outside the vocabulary; folded ones land in
// -1 … n_vocab, both edges included, so real pieces get decoded too.
std::vector<int32_t> FoldIntoVocab(std::span<const int32_t> raw, int32_t n_vocab) {
  std::vector<int32_t> folded;
  folded.reserve(raw.size());
  const uint32_t range = static_cast<uint32_t>(n_vocab) + 2;
  for (int32_t id : raw) {
    folded.push_back(static_cast<int32_t>(static_cast<uint32_t>(id) % range) - 1);
  }
  return folded;
}

void DecodeIds(const NamedTokenizer& t, std::span<const int32_t> raw) {
  const Tokenizer& tokenizer = *t.tokenizer;
  (void)tokenizer.Decode(raw);
  (void)tokenizer.Decode(raw, /*remove_special=*/true, /*render_special=*/true);
  (void)Stream(t, raw, {.render_special = true});

  const std::vector<int32_t> ids = FoldIntoVocab(raw, tokenizer.n_vocab());
  size_t sink = 0;
  for (size_t i = 0; i < ids.size() && i < kMaxQueriedIds; ++i) {
    const int32_t id = ids[i];
    sink += tokenizer.TokenToPiece(id, /*render_special=*/false).size();
    sink += tokenizer.TokenToPiece(id, /*render_special=*/true).size();
    sink += tokenizer.TokenText(id).size();
    sink += tokenizer.TokenAttributes(id);
    sink += tokenizer.IsControl(id) + tokenizer.IsEndOfGeneration(id);
  }
  (void)tokenizer.Decode(ids, /*remove_special=*/true, /*render_special=*/false);
  StreamAndCompare(t, ids, /*render_special=*/false);
  StreamAndCompare(t, ids, /*render_special=*/true);
  // A chat format's markers shown without render_special (the router's
  // tool-call parsing): the input's first two ids stand in for them.
  std::vector<int32_t> shown(ids.begin(), ids.begin() + std::min<size_t>(ids.size(), 2));
  (void)Stream(t, ids, {.strip_leading_space = true, .shown_special = std::move(shown)});
  if (sink == 0xdeadbeef) std::abort();  // keeps the queries from being optimized away
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (Tokenizers().empty()) {
    std::fprintf(stderr,
                 "tokenizer_fuzz: no tokenizer loaded from %s (set KVMESH_FUZZ_VOCAB_DIR to a "
                 "folder of vocab-only GGUF files, e.g. ../shared/vocab)\n",
                 kvmesh::fuzz::VocabDir().c_str());
    std::exit(1);
  }
  std::fprintf(stderr, "tokenizer_fuzz: %zu tokenizers from %s\n", Tokenizers().size(),
               kvmesh::fuzz::VocabDir().c_str());
  return 0;
}

// The first byte picks the tokenizer (one per input keeps the rate of
// executions up: encoding 2 KiB with every vocabulary under ASan took about
// 60 ms); the rest is the text, and the same bytes as ids.
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const NamedTokenizer& t = Tokenizers()[data[0] % Tokenizers().size()];
  ++data;
  --size;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::vector<int32_t> raw_ids(size / sizeof(int32_t));
  if (!raw_ids.empty()) std::memcpy(raw_ids.data(), data, raw_ids.size() * sizeof(int32_t));
  EncodeText(t, text);
  DecodeIds(t, raw_ids);
  return 0;
}
