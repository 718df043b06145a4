// The --save-logits / --kl-base file: round trip, and the errors for files
// that are not ours, truncated or unfinished.
#include "worker/eval/logprob_file.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace kvmesh {
namespace {

std::string TempPath(const std::string& name) {
  return (std::filesystem::temp_directory_path() / name).string();
}

LogProbHeader SmallHeader() {
  LogProbHeader h;
  h.n_vocab = 3;
  h.n_ctx = 4;
  h.n_chunk = 2;
  h.first = 2;  // one scored row per chunk
  h.model_identity = "abc";
  h.tokens = {1, 5, 6, 7, 1, 8, 9, 10};
  return h;
}

TEST(LogProbFileTest, RoundTrip) {
  const std::string path = TempPath("kvmesh_logprob_roundtrip.logp");
  {
    auto writer = LogProbWriter::Create(path, SmallHeader());
    ASSERT_TRUE(writer.ok()) << writer.status().ToString();
    ASSERT_TRUE((*writer)->WriteChunk(std::vector<float>{-1.0f, -2.0f, -0.5f}).ok());
    ASSERT_TRUE((*writer)->WriteChunk(std::vector<float>{-3.0f, -0.25f, -4.0f}).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  // 32-byte header + 3 identity bytes + 8 tokens + 2 chunks of 3 floats.
  EXPECT_EQ(std::filesystem::file_size(path), 32u + 3 + 8 * 4 + 6 * 4);
  auto reader = LogProbReader::Open(path);
  ASSERT_TRUE(reader.ok()) << reader.status().ToString();
  const LogProbHeader& h = (*reader)->header();
  EXPECT_EQ(h.n_vocab, 3);
  EXPECT_EQ(h.n_ctx, 4);
  EXPECT_EQ(h.n_chunk, 2);
  EXPECT_EQ(h.first, 2);
  EXPECT_EQ(h.model_identity, "abc");
  EXPECT_EQ(h.tokens, SmallHeader().tokens);
  std::vector<float> chunk;
  ASSERT_TRUE((*reader)->ReadChunk(&chunk).ok());
  EXPECT_EQ(chunk, (std::vector<float>{-1.0f, -2.0f, -0.5f}));
  ASSERT_TRUE((*reader)->ReadChunk(&chunk).ok());
  EXPECT_EQ(chunk, (std::vector<float>{-3.0f, -0.25f, -4.0f}));
  EXPECT_EQ((*reader)->ReadChunk(&chunk).code(), StatusCode::kOutOfRange);
  std::filesystem::remove(path);
}

TEST(LogProbFileTest, UnfinishedWriterLeavesNoFile) {
  const std::string path = TempPath("kvmesh_logprob_unfinished.logp");
  std::filesystem::remove(path);
  {
    auto writer = LogProbWriter::Create(path, SmallHeader());
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->WriteChunk(std::vector<float>{-1.0f, -2.0f, -0.5f}).ok());
    EXPECT_EQ((*writer)->Finish().message(), path + ": finished after 1 of 2 chunks");
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(LogProbFileTest, BadFiles) {
  const std::string path = TempPath("kvmesh_logprob_bad.logp");
  {
    std::ofstream out(path, std::ios::binary);
    out << "not a log-prob file at all";
  }
  EXPECT_EQ(LogProbReader::Open(path).status().message(),
            path +
                ": not a kvmesh log-prob file (write one with `kvmesh perplexity "
                "--save-logits`)");
  {
    auto writer = LogProbWriter::Create(path, SmallHeader());
    ASSERT_TRUE((*writer)->WriteChunk(std::vector<float>{-1.0f, -2.0f, -0.5f}).ok());
    ASSERT_TRUE((*writer)->WriteChunk(std::vector<float>{-3.0f, -0.25f, -4.0f}).ok());
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  std::filesystem::resize_file(path, 80);
  EXPECT_EQ(LogProbReader::Open(path).status().message(),
            path + ": has 80 bytes, its header implies 91 (truncated or not finished?)");
  EXPECT_EQ(LogProbReader::Open(path + ".missing").status().code(), StatusCode::kNotFound);
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kvmesh
