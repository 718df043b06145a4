#include "common/tokenizer/streaming_detokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/tokenizer/test_util.h"
#include "common/tokenizer/unicode.h"

namespace kvmesh {
namespace {

using Ids = std::vector<int32_t>;
using testing_util::SharedTokenizerOrFail;
using testing_util::VocabPath;

// Feeds `ids` one by one; returns every Feed() result and then Flush()'s.
std::vector<std::string> Stream(StreamingDetokenizer& stream, const Ids& ids) {
  std::vector<std::string> outputs;
  for (int32_t id : ids) outputs.push_back(stream.Feed(id));
  outputs.push_back(stream.Flush());
  return outputs;
}

bool IsValidUtf8(std::string_view s) {
  while (!s.empty()) {
    const int n = unicode::NextUtf8Sequence(s);
    if (n <= 0) return false;
    s.remove_prefix(n);
  }
  return true;
}

TEST(StreamingDetokenizerTest, HoldsByteFallbackEmojiUntilComplete) {
  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  ASSERT_NE(spm, nullptr);
  // " is 🦙.cpp": ▁is, ▁, <0xF0>, <0x9F>, <0xA6>, <0x99>, ., cpp
  StreamingDetokenizer stream(*spm, {});
  EXPECT_EQ(Stream(stream, {338, 29871, 243, 162, 169, 156, 29889, 8223}),
            (std::vector<std::string>{" is", " ", "", "", "", "\xF0\x9F\xA6\x99", ".", "cpp", ""}));
}

TEST(StreamingDetokenizerTest, HoldsCjkSplitAcrossByteLevelTokens) {
  auto gpt2 = SharedTokenizerOrFail(VocabPath("gpt-2"));
  ASSERT_NE(gpt2, nullptr);
  const Ids ids = gpt2->Encode("我想", false, false);
  ASSERT_EQ(ids, (Ids{22755, 239, 46349, 111}));  // each character is two tokens
  StreamingDetokenizer stream(*gpt2, {});
  EXPECT_EQ(Stream(stream, ids),
            (std::vector<std::string>{"", "\xE6\x88\x91", "", "\xE6\x83\xB3", ""}));
}

TEST(StreamingDetokenizerTest, FirstTokenRuleAndSpecialTokens) {
  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  ASSERT_NE(spm, nullptr);
  StreamingDetokenizer plain(*spm, {});
  EXPECT_EQ(Stream(plain, {15043, 3186}), (std::vector<std::string>{" Hello", " world", ""}));
  StreamingDetokenizer stripped(*spm, {.render_special = false, .strip_leading_space = true});
  EXPECT_EQ(Stream(stripped, {15043, 3186}), (std::vector<std::string>{"Hello", " world", ""}));
  // Flush() starts a new stream: the next first token is stripped again.
  EXPECT_EQ(stripped.Feed(3186), "world");
  stripped.Reset();
  StreamingDetokenizer rendered(*spm, {.render_special = true, .strip_leading_space = true});
  EXPECT_EQ(Stream(rendered, {1, 15043, 2}),
            (std::vector<std::string>{"<s>", " Hello", "</s>", ""}));
  // Only the listed control tokens show: EOS (2) is shown, BOS (1) is not.
  StreamingDetokenizer markers(*spm, {.shown_special = {2}});
  EXPECT_EQ(Stream(markers, {1, 15043, 2}), (std::vector<std::string>{"", " Hello", "</s>", ""}));
}

TEST(StreamingDetokenizerTest, ReplacesBytesThatCannotBecomeCharacters) {
  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  ASSERT_NE(spm, nullptr);
  const int32_t e6 = spm->Encode("\xE6", false, false).back();  // <0xE6>
  const int32_t a9 = spm->Encode("\xA9", false, false).back();  // <0xA9>
  ASSERT_EQ(spm->TokenText(e6), "<0xE6>");
  ASSERT_EQ(spm->TokenText(a9), "<0xA9>");
  StreamingDetokenizer stream(*spm, {});
  // A lone continuation byte is invalid at once; a lead byte waits, then the
  // stream ends and it becomes U+FFFD.
  EXPECT_EQ(Stream(stream, {a9, 15043, e6}),
            (std::vector<std::string>{"\xEF\xBF\xBD", " Hello", "", "\xEF\xBF\xBD"}));
  // A lead byte followed by a non-continuation: the lead alone is replaced.
  EXPECT_EQ(Stream(stream, {e6, 15043}), (std::vector<std::string>{"", "\xEF\xBF\xBD Hello", ""}));
}

// Over every test vector: no output splits a character, and the outputs add
// up to Decode()'s text, or for vocabularies whose Decode() tidies spaces, to
// the original text (their pieces reproduce it exactly).
TEST(StreamingDetokenizerTest, ConcatenationEqualsDecodeOnAllVectors) {
  for (const std::string name :
       {"llama-spm", "phi-3", "llama-bpe", "qwen2", "gpt-2", "deepseek-coder", "deepseek-llm",
        "falcon", "mpt", "refact", "starcoder"}) {
    auto tokenizer = SharedTokenizerOrFail(VocabPath(name));
    ASSERT_NE(tokenizer, nullptr);
    StreamingDetokenizer stream(*tokenizer, {.render_special = false, .strip_leading_space = true});
    for (const auto& v : testing_util::LoadVectorsOrFail(name)) {
      const Ids ids = tokenizer->Encode(v.text, false, false);
      std::string streamed;
      for (const std::string& part : Stream(stream, ids)) {
        EXPECT_TRUE(IsValidUtf8(part)) << name << ": " << v.text;
        streamed += part;
      }
      const std::string expected =
          tokenizer->config().clean_spaces ? v.text : tokenizer->Decode(ids);
      EXPECT_EQ(streamed, expected) << name << ": " << v.text;
    }
  }
}

TEST(StreamingDetokenizerTest, WordPieceStreamsItsPieces) {
  auto bert = SharedTokenizerOrFail(VocabPath("bert-bge"));
  ASSERT_NE(bert, nullptr);
  StreamingDetokenizer stream(*bert, {});
  // [CLS] hello , world ! [SEP]: no tidying of " ," while streaming.
  EXPECT_EQ(Stream(stream, {101, 7592, 1010, 2088, 999, 102}),
            (std::vector<std::string>{"", " hello", " ,", " world", " !", "", ""}));
}

}  // namespace
}  // namespace kvmesh
