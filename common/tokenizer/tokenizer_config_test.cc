#include "common/tokenizer/tokenizer_config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "common/gguf/gguf_file.h"
#include "common/gguf/gguf_writer.h"
#include "common/tokenizer/test_util.h"
#include "common/tokenizer/tokenizer.h"

namespace kvmesh {
namespace {

using gguf::GgufWriter;

// A five-token SentencePiece vocabulary.
GgufWriter SpmWriter() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetString("tokenizer.ggml.model", "llama");
  w.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>",
                                             "\xE2\x96\x81"
                                             "a",
                                             "a"});
  w.SetFloat32Array("tokenizer.ggml.scores", {0, 0, 0, -1, -2});
  w.SetInt32Array("tokenizer.ggml.token_type", {2, 3, 3, 1, 1});
  return w;
}

// A byte-level BPE vocabulary with one merge.
GgufWriter BpeWriter(const std::string& pre) {
  GgufWriter w;
  w.SetString("tokenizer.ggml.model", "gpt2");
  w.SetString("tokenizer.ggml.pre", pre);
  w.SetStringArray("tokenizer.ggml.tokens", {"a", "b", "ab", "<|endoftext|>"});
  w.SetInt32Array("tokenizer.ggml.token_type", {1, 1, 1, 3});
  w.SetStringArray("tokenizer.ggml.merges", {"a b"});
  return w;
}

StatusOr<TokenizerConfig> ConfigOf(const GgufWriter& writer) {
  const std::vector<uint8_t> bytes = writer.Serialize();
  auto file = gguf::GgufFile::Parse("test.gguf", bytes);
  if (!file.ok()) return file.status();
  return TokenizerConfigFromGguf(**file);
}

// The error's message, which must name the file and contain every `part`.
void ExpectError(const StatusOr<TokenizerConfig>& config, StatusCode code,
                 const std::vector<std::string>& parts) {
  ASSERT_FALSE(config.ok());
  EXPECT_EQ(config.status().code(), code) << config.status().ToString();
  const std::string& message = config.status().message();
  EXPECT_NE(message.find("test.gguf"), std::string::npos) << message;
  for (const std::string& part : parts) {
    EXPECT_NE(message.find(part), std::string::npos) << "missing \"" << part << "\" in " << message;
  }
}

TEST(TokenizerConfigTest, MissingTokensIsNotFound) {
  GgufWriter w;
  w.SetString("tokenizer.ggml.model", "llama");
  ExpectError(ConfigOf(w), StatusCode::kNotFound, {"\"tokenizer.ggml.tokens\"", "missing"});
}

TEST(TokenizerConfigTest, MissingModelIsNotFound) {
  GgufWriter w;
  w.SetStringArray("tokenizer.ggml.tokens", {"a"});
  ExpectError(ConfigOf(w), StatusCode::kNotFound, {"\"tokenizer.ggml.model\""});
}

TEST(TokenizerConfigTest, UnknownPreTokenizerListsTheSupportedOnes) {
  ExpectError(ConfigOf(BpeWriter("my-pre")), StatusCode::kInvalidArgument,
              {"\"tokenizer.ggml.pre\"", "\"my-pre\"", "unsupported pre-tokenizer", "llama-bpe",
               "qwen2", "deepseek-coder", "starcoder"});
}

TEST(TokenizerConfigTest, UnknownModelListsTheSupportedOnes) {
  GgufWriter w = SpmWriter();
  w.SetString("tokenizer.ggml.model", "t5");
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument,
              {"\"tokenizer.ggml.model\"", "\"t5\"", "llama", "gpt2", "bert"});
}

TEST(TokenizerConfigTest, TokensOfTheWrongTypeAreRejected) {
  GgufWriter w;
  w.SetString("tokenizer.ggml.model", "llama");
  w.SetInt32Array("tokenizer.ggml.tokens", {1, 2, 3});
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument,
              {"\"tokenizer.ggml.tokens\"", "INT32", "STRING"});
}

TEST(TokenizerConfigTest, ShortScoresAreRejected) {
  GgufWriter w = SpmWriter();
  w.SetFloat32Array("tokenizer.ggml.scores", {0, 0, 0, 0});
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument,
              {"\"tokenizer.ggml.scores\"", "4 entries for 5 tokens"});
}

TEST(TokenizerConfigTest, ShortTokenTypesAreRejected) {
  GgufWriter w = SpmWriter();
  w.SetInt32Array("tokenizer.ggml.token_type", {1, 1});
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument,
              {"\"tokenizer.ggml.token_type\"", "2 entries for 5 tokens"});
}

TEST(TokenizerConfigTest, ScoresOfTheWrongTypeAreRejected) {
  GgufWriter w = SpmWriter();
  w.SetStringArray("tokenizer.ggml.scores", {"0", "0", "0", "0", "0"});
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument, {"\"tokenizer.ggml.scores\"", "FLOAT32"});
}

TEST(TokenizerConfigTest, SpecialIdOutOfRangeIsRejected) {
  GgufWriter w = SpmWriter();
  w.SetUint32("tokenizer.ggml.bos_token_id", 99);
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument,
              {"\"tokenizer.ggml.bos_token_id\"", "99", "5 tokens"});
}

TEST(TokenizerConfigTest, AllOnesSpecialIdMeansNone) {
  GgufWriter w = SpmWriter();
  w.SetUint32("tokenizer.ggml.seperator_token_id", UINT32_MAX);
  w.SetInt32("tokenizer.ggml.padding_token_id", -1);
  auto config = ConfigOf(w);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->sep_id, kNoToken);
  EXPECT_EQ(config->pad_id, kNoToken);
}

TEST(TokenizerConfigTest, MissingMergesAreRejected) {
  GgufWriter w;
  w.SetString("tokenizer.ggml.model", "gpt2");
  w.SetStringArray("tokenizer.ggml.tokens", {"a"});
  ExpectError(ConfigOf(w), StatusCode::kNotFound, {"\"tokenizer.ggml.merges\""});
}

TEST(TokenizerConfigTest, AddingAMissingBosIsRejected) {
  GgufWriter w = BpeWriter("glm4");  // glm4 vocabularies have no BOS by default
  w.SetBool("tokenizer.ggml.add_bos_token", true);
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument,
              {"add_bos_token is true", "bos_token_id names no token"});
}

TEST(TokenizerConfigTest, DuplicateTokensAreRejected) {
  GgufWriter w = SpmWriter();
  w.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "a", "a"});
  ExpectError(ConfigOf(w), StatusCode::kInvalidArgument, {"\"a\" twice", "id 4"});
}

TEST(TokenizerConfigTest, SpmDefaults) {
  auto config = ConfigOf(SpmWriter());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->model, TokenizerModel::kSpm);
  EXPECT_EQ(config->bos_id, 1);
  EXPECT_EQ(config->eos_id, 2);
  EXPECT_EQ(config->unk_id, 0);
  EXPECT_EQ(config->sep_id, kNoToken);
  EXPECT_TRUE(config->add_bos);
  EXPECT_FALSE(config->add_eos);
  EXPECT_TRUE(config->add_space_prefix);
  EXPECT_FALSE(config->clean_spaces);
  EXPECT_EQ(config->eog_ids, (std::vector<int32_t>{2}));
  EXPECT_EQ(config->scores, (std::vector<float>{0, 0, 0, -1, -2}));
  EXPECT_EQ(config->token_attrs,
            (std::vector<uint32_t>{kTokenAttrUnknown, kTokenAttrControl, kTokenAttrControl,
                                   kTokenAttrNormal, kTokenAttrNormal}));
}

TEST(TokenizerConfigTest, FileKeysOverrideDefaults) {
  GgufWriter w = SpmWriter();
  w.SetBool("tokenizer.ggml.add_space_prefix", false);
  w.SetBool("tokenizer.ggml.add_bos_token", false);
  w.SetBool("tokenizer.ggml.add_eos_token", true);
  w.SetUint32("tokenizer.ggml.eos_token_id", 4);
  auto config = ConfigOf(w);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_FALSE(config->add_space_prefix);
  EXPECT_FALSE(config->add_bos);
  EXPECT_TRUE(config->add_eos);
  EXPECT_EQ(config->eos_id, 4);
  EXPECT_EQ(config->eog_ids, (std::vector<int32_t>{2, 4}));  // "</s>" ends generation by name
}

TEST(TokenizerConfigTest, EmptyTokensAreRenamed) {
  GgufWriter w = SpmWriter();
  w.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "<s>", "</s>", "", "a"});
  auto config = ConfigOf(w);
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_EQ(config->tokens[3], "[EMPTY_3]");
}

TEST(TokenizerConfigTest, BpePreTokenizerSetsItsDefaults) {
  auto qwen = ConfigOf(BpeWriter("qwen2"));
  ASSERT_TRUE(qwen.ok()) << qwen.status().ToString();
  EXPECT_EQ(qwen->model, TokenizerModel::kBpe);
  EXPECT_FALSE(qwen->clean_spaces);
  EXPECT_FALSE(qwen->add_bos);
  EXPECT_EQ(qwen->merges, (std::vector<std::string>{"a b"}));
  // BPE's default BOS/EOS id 11 does not exist in four tokens.
  EXPECT_EQ(qwen->bos_id, kNoToken);
  EXPECT_EQ(qwen->eot_id, 3);  // "<|endoftext|>", found by its text
  EXPECT_EQ(qwen->eog_ids, (std::vector<int32_t>{3}));

  auto llama3 = ConfigOf(BpeWriter("llama-bpe"));
  ASSERT_FALSE(llama3.ok());  // llama-bpe adds BOS by default, and there is none
}

TEST(TokenizerConfigTest, ResolvesQwen2SpecialTokensLikeLlamaCpp) {
  auto tokenizer = testing_util::SharedTokenizerOrFail(testing_util::VocabPath("qwen2"));
  ASSERT_NE(tokenizer, nullptr);
  const TokenizerConfig& c = tokenizer->config();
  EXPECT_EQ(c.bos_id, 151643);
  EXPECT_EQ(c.eos_id, 151645);
  EXPECT_EQ(c.eot_id, 151645);  // <|im_end|>, not <|endoftext|>
  EXPECT_EQ(c.pad_id, 151643);
  EXPECT_EQ(c.fim_pre_id, 151659);
  EXPECT_EQ(c.fim_suf_id, 151661);
  EXPECT_EQ(c.fim_mid_id, 151660);
  EXPECT_EQ(c.fim_pad_id, 151662);
  EXPECT_EQ(c.fim_rep_id, 151663);
  EXPECT_EQ(c.fim_sep_id, 151664);
  // Includes the vocabulary's plain "</s>" (128247), which llama.cpp's
  // name-based list makes an end-of-generation control token.
  EXPECT_EQ(c.eog_ids, (std::vector<int32_t>{128247, 151643, 151645, 151662, 151663, 151664}));
  EXPECT_FALSE(c.add_bos);
  EXPECT_FALSE(c.clean_spaces);
  EXPECT_EQ(c.pre, "qwen2");
  EXPECT_EQ(c.merges.size(), 151387u);
  EXPECT_EQ(c.token_attrs[151667], kTokenAttrUserDefined);  // <think>
  EXPECT_EQ(c.token_attrs[151669], kTokenAttrUnused);       // [PAD151669]
}

TEST(TokenizerConfigTest, ResolvesLlama3AndPhi3LikeLlamaCpp) {
  auto llama3 = testing_util::SharedTokenizerOrFail(testing_util::VocabPath("llama-bpe"));
  ASSERT_NE(llama3, nullptr);
  EXPECT_EQ(llama3->config().eot_id, 128009);  // <|eot_id|>, not <|end_of_text|>
  EXPECT_EQ(llama3->config().eog_ids, (std::vector<int32_t>{128001, 128009}));
  EXPECT_TRUE(llama3->config().add_bos);
  EXPECT_TRUE(llama3->config().ignore_merges);

  auto phi3 = testing_util::SharedTokenizerOrFail(testing_util::VocabPath("phi-3"));
  ASSERT_NE(phi3, nullptr);
  const TokenizerConfig& c = phi3->config();
  EXPECT_EQ(c.eot_id, 32007);  // <|end|>
  EXPECT_EQ(c.eog_ids, (std::vector<int32_t>{2, 32000, 32007}));
  // general.name "Phi3": specials strip the whitespace after them, except
  // <unk>, <s> and <|endoftext|>.
  EXPECT_TRUE(c.token_attrs[32007] & kTokenAttrRstrip);
  EXPECT_TRUE(c.token_attrs[2] & kTokenAttrRstrip);
  EXPECT_FALSE(c.token_attrs[1] & kTokenAttrRstrip);
  EXPECT_FALSE(c.token_attrs[32000] & kTokenAttrRstrip);
}

TEST(TokenizerConfigTest, FindsDeepseekEndOfSentenceByItsText) {
  auto deepseek = testing_util::SharedTokenizerOrFail(testing_util::VocabPath("deepseek-llm"));
  ASSERT_NE(deepseek, nullptr);
  EXPECT_EQ(deepseek->TokenText(100001),
            "<\xEF\xBD\x9C"
            "end\xE2\x96\x81"
            "of\xE2\x96\x81"
            "sentence\xEF\xBD\x9C>");
  EXPECT_EQ(deepseek->config().eot_id, 100001);
  EXPECT_EQ(deepseek->config().eog_ids, (std::vector<int32_t>{100001}));
}

TEST(TokenizerConfigTest, CopiedConfigTokenizesIdentically) {
  auto original = testing_util::SharedTokenizerOrFail(testing_util::VocabPath("deepseek-llm"));
  ASSERT_NE(original, nullptr);
  TokenizerConfig copy = original->config();  // what a router would receive
  auto rebuilt = Tokenizer::Create(std::move(copy));
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status().ToString();
  const std::string text = "Hello, y'all! 我想在apple工作1314151天～ \n\n  3.14";
  EXPECT_EQ((*rebuilt)->Encode(text, true, false), original->Encode(text, true, false));
}

TEST(ValidateTokenizerConfigTest, RejectsInconsistentConfigs) {
  auto config = ConfigOf(SpmWriter());
  ASSERT_TRUE(config.ok()) << config.status().ToString();
  EXPECT_TRUE(ValidateTokenizerConfig(*config).ok());

  TokenizerConfig short_scores = *config;
  short_scores.scores.pop_back();
  EXPECT_EQ(ValidateTokenizerConfig(short_scores).message(),
            "tokenizer config: scores has 4 entries for 5 tokens");

  TokenizerConfig bad_id = *config;
  bad_id.eos_id = 5;
  EXPECT_EQ(ValidateTokenizerConfig(bad_id).message(),
            "tokenizer config: eos_id = 5 is out of range for 5 tokens");

  TokenizerConfig bad_pre = *config;
  bad_pre.model = TokenizerModel::kBpe;
  bad_pre.pre = "nope";
  EXPECT_EQ(ValidateTokenizerConfig(bad_pre).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(Tokenizer::Create(bad_pre).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace kvmesh
