#include "common/tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kvmesh {
namespace {

using Words = std::vector<std::string>;

Words Split(std::string_view pre, std::string_view text) {
  auto pre_tokenizer = PreTokenizer::Create(pre);
  EXPECT_TRUE(pre_tokenizer.ok()) << pre_tokenizer.status().ToString();
  if (!pre_tokenizer.ok()) return {};
  return (*pre_tokenizer)->Split(text);
}

TEST(PreTokenizerTest, Gpt2KeepsOneSpaceForTheNextWord) {
  EXPECT_EQ(Split("gpt-2", "Hello world's  test  "),
            (Words{"Hello", " world", "'s", " ", " test", "  "}));
  // Contractions are case-sensitive in GPT-2's regex.
  EXPECT_EQ(Split("gpt-2", "I'M"), (Words{"I", "'", "M"}));
  EXPECT_EQ(Split("gpt-2", "a1234 !?"), (Words{"a", "1234", " !?"}));
}

TEST(PreTokenizerTest, Llama3GroupsDigitsByThreeAndFoldsContractions) {
  EXPECT_EQ(Split("llama-bpe", "1234567"), (Words{"123", "456", "7"}));
  EXPECT_EQ(Split("llama-bpe", "I'M ok"), (Words{"I", "'M", " ok"}));
  EXPECT_EQ(Split("llama-bpe", "a\n\n b"), (Words{"a", "\n\n", " b"}));
  EXPECT_EQ(Split("llama-bpe", "x ...\n\ny"), (Words{"x", " ...\n\n", "y"}));
}

TEST(PreTokenizerTest, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(Split("qwen2", "v123"), (Words{"v", "1", "2", "3"}));
}

TEST(PreTokenizerTest, StarcoderSplitsDigitsBeforeGpt2) {
  EXPECT_EQ(Split("starcoder", "x 42y"), (Words{"x", " ", "4", "2", "y"}));
}

TEST(PreTokenizerTest, FalconIsolatesPunctuationRunsAndDigitTriples) {
  EXPECT_EQ(Split("falcon", "a,b 12345"), (Words{"a", ",", "b", " ", "123", "45"}));
}

TEST(PreTokenizerTest, DeepseekLlmUsesItsOwnClasses) {
  EXPECT_EQ(Split("deepseek-llm", "Hi 你好!\n  "), (Words{"Hi", " ", "你好", "!", "\n", "  "}));
}

TEST(PreTokenizerTest, DeepseekCoderIsolatesNewlines) {
  EXPECT_EQ(Split("deepseek-coder", "if x:\n  y1"), (Words{"if", " x", ":", "\n", " ", " y", "1"}));
}

TEST(PreTokenizerTest, MalformedUtf8BecomesReplacementCharacters) {
  EXPECT_EQ(Split("gpt-2", "a\xFF"), (Words{"a", "\xEF\xBF\xBD"}));
}

TEST(PreTokenizerTest, EmptyTextHasNoWords) { EXPECT_EQ(Split("qwen2", ""), Words{}); }

TEST(PreTokenizerTest, UnknownNameListsTheSupportedOnes) {
  auto pre_tokenizer = PreTokenizer::Create("tekken");
  ASSERT_FALSE(pre_tokenizer.ok());
  EXPECT_EQ(pre_tokenizer.status().code(), StatusCode::kInvalidArgument);
  const std::string& message = pre_tokenizer.status().message();
  EXPECT_NE(message.find("\"tekken\""), std::string::npos) << message;
  EXPECT_NE(message.find("llama-bpe"), std::string::npos) << message;
  EXPECT_NE(message.find("qwen2"), std::string::npos) << message;
}

}  // namespace
}  // namespace kvmesh
