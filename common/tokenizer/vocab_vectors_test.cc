// llama.cpp's tokenizer test vectors (shared/vocab, see its README): every
// usable vocabulary must reproduce llama_tokenize(text, add_special=false,
// parse_special=false) exactly, and decode back to the text where the
// tokenizer is lossless.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "common/tokenizer/test_util.h"
#include "common/tokenizer/tokenizer.h"

namespace kvmesh {
namespace {

using testing_util::LoadVectorsOrFail;
using testing_util::SharedTokenizerOrFail;
using testing_util::VocabPath;

std::string Show(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    out += ' ';
    out += std::to_string(id);
  }
  return out;
}

TEST(SharedDataTest, VocabFolderIsPresent) {
  // Every test below needs shared/vocab; a missing folder must fail, not skip.
  ASSERT_TRUE(std::filesystem::is_directory(testing_util::SharedDir() + "/vocab"))
      << testing_util::SharedDir() << "/vocab is missing: the tokenizer tests need the shared "
      << "test data (KVMESH_SHARED_DIR)";
}

class VocabVectorsTest : public ::testing::TestWithParam<std::string> {};

TEST_P(VocabVectorsTest, EncodeMatchesLlamaCpp) {
  const std::string name = GetParam();
  auto tokenizer = SharedTokenizerOrFail(VocabPath(name));
  ASSERT_NE(tokenizer, nullptr);
  const auto vectors = LoadVectorsOrFail(name);
  ASSERT_EQ(vectors.size(), 46u) << name;
  int passed = 0;
  for (const auto& v : vectors) {
    const std::vector<int32_t> ids = tokenizer->Encode(v.text, false, false);
    if (ids == v.ids) {
      ++passed;
    } else {
      ADD_FAILURE() << name << ": text \"" << v.text << "\"\n  expected" << Show(v.ids)
                    << "\n  got     " << Show(ids);
    }
  }
  std::printf("[ vectors  ] %-15s %d/%zu\n", name.c_str(), passed, vectors.size());
  EXPECT_EQ(passed, static_cast<int>(vectors.size()));
}

INSTANTIATE_TEST_SUITE_P(SharedVocabs, VocabVectorsTest,
                         ::testing::Values("llama-spm", "phi-3", "llama-bpe", "qwen2", "gpt-2",
                                           "deepseek-coder", "deepseek-llm", "falcon", "mpt",
                                           "refact", "starcoder", "bert-bge"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// Decode(Encode(text)) is the text again on every vocabulary except BERT's
// (below). SPM's added leading space goes again; vocabularies with
// clean_spaces tidy "😁 ?" into "😁?", the only clean-up these texts trigger.
class RoundTripTest : public ::testing::TestWithParam<std::string> {};

TEST_P(RoundTripTest, DecodeGivesTheTextBack) {
  const std::string name = GetParam();
  auto tokenizer = SharedTokenizerOrFail(VocabPath(name));
  ASSERT_NE(tokenizer, nullptr);
  const auto vectors = LoadVectorsOrFail(name);
  ASSERT_EQ(vectors.size(), 46u) << name;
  int same = 0;
  int tidied = 0;
  for (const auto& v : vectors) {
    std::string expected = v.text;
    const size_t tidy = expected.find("\xF0\x9F\x98\x81 ?");
    if (tokenizer->config().clean_spaces && tidy != std::string::npos) {
      expected.erase(tidy + 4, 1);
      ++tidied;
    }
    const std::string decoded = tokenizer->Decode(tokenizer->Encode(v.text, false, false));
    EXPECT_EQ(decoded, expected) << name;
    same += decoded == expected;
  }
  std::printf("[ roundtrip] %-15s %d/%zu\n", name.c_str(), same, vectors.size());
  EXPECT_EQ(tidied, tokenizer->config().clean_spaces ? 2 : 0) << name;
}

INSTANTIATE_TEST_SUITE_P(SharedVocabs, RoundTripTest,
                         ::testing::Values("llama-spm", "phi-3", "llama-bpe", "qwen2", "gpt-2",
                                           "deepseek-coder", "deepseek-llm", "falcon", "mpt",
                                           "refact", "starcoder"),
                         [](const auto& info) {
                           std::string name = info.param;
                           for (char& c : name) {
                             if (c == '-') c = '_';
                           }
                           return name;
                         });

// WordPiece lower-cases, strips accents and drops what it cannot spell, and
// every word-initial piece brings its space back.
TEST(WordPieceDecodeTest, DecodesNormalizedWords) {
  auto tokenizer = SharedTokenizerOrFail(VocabPath("bert-bge"));
  ASSERT_NE(tokenizer, nullptr);
  auto round_trip = [&](const std::string& text) {
    return tokenizer->Decode(tokenizer->Encode(text, false, false));
  };
  EXPECT_EQ(round_trip("Hello, world!"), " hello, world!");
  EXPECT_EQ(round_trip("C\xE1\xBB\xAD"
                       "a Vi\xE1\xBB\x87t"),
            " cua viet");
  EXPECT_EQ(round_trip(" this is \xF0\x9F\xA6\x99.cpp"), " this is. cpp");
}

}  // namespace
}  // namespace kvmesh
