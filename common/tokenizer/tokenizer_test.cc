#include "common/tokenizer/tokenizer.h"

#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "common/gguf/gguf_file.h"
#include "common/tokenizer/test_util.h"

namespace kvmesh {
namespace {

using Ids = std::vector<int32_t>;
using testing_util::SharedTokenizerOrFail;
using testing_util::VocabPath;

std::string StoriesPath() { return testing_util::SharedDir() + "/models/stories260K.gguf"; }

nlohmann::json ReadGolden(const std::string& name) {
  const std::string text =
      testing_util::ReadFileOrFail(testing_util::SharedDir() + "/golden/stories260K/" + name);
  return text.empty() ? nlohmann::json() : nlohmann::json::parse(text);
}

// llama.cpp's llama-tokenize output for stories260K (see its README).
TEST(TokenizerGoldenTest, Stories260KTokenizeMatchesLlamaCpp) {
  auto tokenizer = SharedTokenizerOrFail(StoriesPath());
  ASSERT_NE(tokenizer, nullptr);
  const nlohmann::json golden = ReadGolden("tokenize.json");
  ASSERT_EQ(golden.size(), 13u);
  for (const auto& item : golden) {
    const std::string text = item["text"];
    EXPECT_EQ(tokenizer->Encode(text, false, false), item["tokens"].get<Ids>()) << text;
    EXPECT_EQ(tokenizer->Encode(text, true, false), item["tokens_with_bos"].get<Ids>()) << text;
    const auto pieces = item["pieces"].get<std::vector<std::string>>();
    const Ids tokens = item["tokens"].get<Ids>();
    ASSERT_EQ(pieces.size(), tokens.size()) << text;
    for (size_t i = 0; i < tokens.size(); ++i) {
      EXPECT_EQ(tokenizer->TokenText(tokens[i]), pieces[i]) << text << " #" << i;
    }
  }
}

TEST(TokenizerGoldenTest, Stories260KGenerationPromptsAndText) {
  auto tokenizer = SharedTokenizerOrFail(StoriesPath());
  ASSERT_NE(tokenizer, nullptr);
  const nlohmann::json golden = ReadGolden("generate_greedy.json");
  ASSERT_EQ(golden.size(), 5u);
  for (const auto& run : golden) {
    const std::string prompt = run["prompt"];
    EXPECT_EQ(tokenizer->Encode(prompt, true, false), run["prompt_tokens"].get<Ids>()) << prompt;
    // The server's text is the generated tokens' pieces, leading space kept.
    std::string text;
    for (int32_t id : run["generated_tokens"].get<Ids>())
      text += tokenizer->TokenToPiece(id, false);
    EXPECT_EQ(text, run["generated_text"].get<std::string>()) << prompt;
  }
}

TEST(TokenizerTest, ParseSpecialMatchesControlTokenText) {
  auto tokenizer = SharedTokenizerOrFail(VocabPath("llama-bpe"));
  ASSERT_NE(tokenizer, nullptr);
  const std::string text = "<|begin_of_text|>Hello";
  EXPECT_EQ(tokenizer->Encode(text, false, true), (Ids{128000, 9906}));
  // Plain text: "<", "|", "begin", "_of", "_text", "|", ">", "Hello".
  const Ids plain = tokenizer->Encode(text, false, false);
  EXPECT_EQ(plain, (Ids{27, 91, 7413, 3659, 4424, 91, 29, 9906}));
  EXPECT_EQ(tokenizer->Decode(plain), text);
}

TEST(TokenizerTest, UserDefinedTokensMatchWithoutParseSpecial) {
  auto tokenizer = SharedTokenizerOrFail(VocabPath("qwen2"));
  ASSERT_NE(tokenizer, nullptr);
  EXPECT_EQ(tokenizer->Encode("<think>hi</think>", false, false), (Ids{151667, 6023, 151668}));
  EXPECT_EQ(tokenizer->Encode("<|im_start|>user", false, false),
            (Ids{27, 91, 318, 4906, 91, 29, 872}));
  EXPECT_EQ(tokenizer->Encode("<|im_start|>user", false, true), (Ids{151644, 872}));
}

TEST(TokenizerTest, AddSpecialFollowsTheConfig) {
  auto llama3 = SharedTokenizerOrFail(VocabPath("llama-bpe"));
  auto qwen2 = SharedTokenizerOrFail(VocabPath("qwen2"));
  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  auto bert = SharedTokenizerOrFail(VocabPath("bert-bge"));
  ASSERT_TRUE(llama3 && qwen2 && spm && bert);
  EXPECT_EQ(llama3->Encode("Hello", true, false), (Ids{128000, 9906}));
  EXPECT_EQ(qwen2->Encode("Hello", true, false), (Ids{9707}));  // add_bos_token = false
  EXPECT_EQ(spm->Encode("Hello", true, false), (Ids{1, 15043}));
  EXPECT_EQ(spm->Encode("", true, false), (Ids{1}));
  EXPECT_EQ(spm->Encode("", false, false), Ids{});
  EXPECT_EQ(bert->Encode("Hello, World!", true, false), (Ids{101, 7592, 1010, 2088, 999, 102}));
}

TEST(TokenizerTest, SpmPrefixesTextAfterSpecialTokensWithASpace) {
  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  ASSERT_NE(spm, nullptr);
  // "<s>" is parsed as BOS; the text after it starts a new "▁Hello".
  EXPECT_EQ(spm->Encode("<s>Hello", false, true), (Ids{1, 15043}));
  EXPECT_EQ(spm->Encode(" this is \xF0\x9F\xA6\x99.cpp", false, false),
            (Ids{29871, 445, 338, 29871, 243, 162, 169, 156, 29889, 8223}));
}

TEST(TokenizerTest, TokenToPieceGivesRawBytes) {
  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  auto gpt2 = SharedTokenizerOrFail(VocabPath("gpt-2"));
  auto qwen2 = SharedTokenizerOrFail(VocabPath("qwen2"));
  ASSERT_TRUE(spm && gpt2 && qwen2);
  EXPECT_EQ(spm->TokenToPiece(15043, false), " Hello");
  EXPECT_EQ(spm->TokenToPiece(13, false), "\n");     // <0x0A>
  EXPECT_EQ(spm->TokenToPiece(243, false), "\xF0");  // <0xF0>
  EXPECT_EQ(spm->TokenToPiece(1, false), "");        // <s>, a control token
  EXPECT_EQ(spm->TokenToPiece(1, true), "<s>");
  EXPECT_EQ(spm->TokenToPiece(0, false), "");  // <unk>
  EXPECT_EQ(spm->TokenToPiece(-1, true), "");
  EXPECT_EQ(spm->TokenToPiece(32000, true), "");
  EXPECT_EQ(gpt2->TokenToPiece(995, false), " world");      // "Ġworld"
  EXPECT_EQ(gpt2->TokenToPiece(22755, false), "\xE6\x88");  // first bytes of 我
  EXPECT_EQ(gpt2->TokenToPiece(50256, true), "<|endoftext|>");
  EXPECT_EQ(qwen2->TokenToPiece(151669, true), "");  // an unused [PAD] slot
  EXPECT_EQ(qwen2->TokenToPiece(151667, false), "<think>");
}

TEST(TokenizerTest, DecodeFollowsLlamaDetokenize) {
  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  auto gpt2 = SharedTokenizerOrFail(VocabPath("gpt-2"));
  ASSERT_TRUE(spm && gpt2);
  // The space SPM added before "Hello" goes again, unless a BOS came first.
  EXPECT_EQ(spm->Decode(Ids{15043, 3186}), "Hello world");
  EXPECT_EQ(spm->Decode(Ids{1, 15043}), " Hello");
  EXPECT_EQ(spm->Decode(Ids{1, 15043}, /*remove_special=*/true), " Hello");
  EXPECT_EQ(spm->Decode(Ids{1, 15043}, false, /*render_special=*/true), "<s> Hello");
  // GPT-2 tidies the spaces around punctuation and contractions.
  EXPECT_EQ(gpt2->Decode(gpt2->Encode("a , b . c ' d 's", false, false)), "a, b. c'd's");
  EXPECT_EQ(gpt2->Decode(Ids{}), "");
}

TEST(TokenizerTest, ReportsSpecialTokens) {
  auto qwen2 = SharedTokenizerOrFail(VocabPath("qwen2"));
  ASSERT_NE(qwen2, nullptr);
  EXPECT_EQ(qwen2->n_vocab(), 151936);
  EXPECT_EQ(qwen2->bos_id(), 151643);
  EXPECT_EQ(qwen2->eos_id(), 151645);
  EXPECT_EQ(qwen2->eot_id(), 151645);
  EXPECT_EQ(qwen2->linefeed_id(), 198);
  EXPECT_TRUE(qwen2->IsEndOfGeneration(151645));
  EXPECT_TRUE(qwen2->IsEndOfGeneration(151643));
  EXPECT_FALSE(qwen2->IsEndOfGeneration(151644));
  EXPECT_FALSE(qwen2->IsEndOfGeneration(151936));
  EXPECT_TRUE(qwen2->IsControl(151644));
  EXPECT_FALSE(qwen2->IsControl(151667));  // <think> is user-defined
  EXPECT_FALSE(qwen2->IsControl(9707));
  EXPECT_EQ(qwen2->TokenAttributes(9707), kTokenAttrNormal);
  EXPECT_EQ(qwen2->TokenText(9707), "Hello");
  EXPECT_EQ(qwen2->TokenText(-3), "");

  auto spm = SharedTokenizerOrFail(VocabPath("llama-spm"));
  ASSERT_NE(spm, nullptr);
  EXPECT_EQ(spm->linefeed_id(), 13);
  EXPECT_EQ(spm->unk_id(), 0);
}

TEST(TokenizerTest, EncodeIsSafeFromManyThreads) {
  auto tokenizer = SharedTokenizerOrFail(VocabPath("deepseek-llm"));
  ASSERT_NE(tokenizer, nullptr);
  const std::string text = "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ \n 3.3 3..3";
  const Ids expected = tokenizer->Encode(text, true, false);
  std::vector<Ids> results(4);
  std::vector<std::thread> threads;
  for (Ids& result : results) {
    threads.emplace_back([&] {
      for (int i = 0; i < 50; ++i) result = tokenizer->Encode(text, true, false);
    });
  }
  for (std::thread& t : threads) t.join();
  for (const Ids& result : results) EXPECT_EQ(result, expected);
}

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr double kSlowdown = 10;
#else
constexpr double kSlowdown = 1;
#endif

// Not a speed test (speed is measured in bench/): the bounds catch a loader
// or encoder gone quadratic in the vocabulary or the text, which would take
// minutes here. They sit far above a shared 2-core machine's times (load
// 0.44 s idle, 1.03 s with other work running; encode 4 ms).
TEST(TokenizerTest, LargeVocabularyLoadsAndEncodesQuickly) {
  using Clock = std::chrono::steady_clock;
  auto ms = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  const auto start = Clock::now();
  auto tokenizer =
      testing_util::LoadTokenizerOrFail(VocabPath("qwen2"));  // 151936 tokens, 151387 merges
  const auto loaded = Clock::now();
  ASSERT_NE(tokenizer, nullptr);
  std::string text;
  while (text.size() < 20000) {
    text +=
        "Hello, y'all! How are you 😁 ?我想在apple工作1314151天～ The quick brown fox. "
        "нещо на Български\n\n  def foo(x):\n    return x * 2\n";
  }
  const auto encode_start = Clock::now();
  const Ids ids = tokenizer->Encode(text, false, false);
  const auto encoded = Clock::now();
  EXPECT_GT(ids.size(), 5000u);
  EXPECT_EQ(tokenizer->Decode(ids), text);
  std::printf("[ timing   ] qwen2 load %.0f ms, encode %zu bytes %.1f ms\n", ms(start, loaded),
              text.size(), ms(encode_start, encoded));
  EXPECT_LT(ms(start, loaded), 10000 * kSlowdown);
  EXPECT_LT(ms(encode_start, encoded), 2500 * kSlowdown);
}

}  // namespace
}  // namespace kvmesh
