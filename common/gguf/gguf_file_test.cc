#include "common/gguf/gguf_file.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/gguf/gguf_writer.h"

namespace kvmesh::gguf {
namespace {

using ::testing::HasSubstr;

const std::string kShared = KVMESH_SHARED_DIR;

std::vector<uint8_t> SmallFile() {
  GgufWriter w;
  w.SetString("general.architecture", "llama");
  w.SetUint32("llama.block_count", 2);
  w.SetFloat32("llama.rope.freq_base", 10000.0f);
  w.SetBool("flag", true);
  w.SetStringArray("tokenizer.ggml.tokens", {"<unk>", "a", "bb"});
  w.SetFloat32Array("tokenizer.ggml.scores", {0.0f, -1.0f, -2.0f});
  std::vector<float> weights(64);
  for (size_t i = 0; i < weights.size(); ++i) weights[i] = static_cast<float>(i);
  EXPECT_TRUE(w.AddTensor("w", TensorType::kF32, {16, 4},
                          {reinterpret_cast<const uint8_t*>(weights.data()), weights.size() * 4})
                  .ok());
  std::vector<uint8_t> q(2 * 18, 0);
  EXPECT_TRUE(w.AddTensor("q", TensorType::kQ4_0, {64}, q).ok());
  return w.Serialize();
}

TEST(GgufFileTest, RoundTripsEveryValueKind) {
  const std::vector<uint8_t> bytes = SmallFile();
  auto file = GgufFile::Parse("small.gguf", bytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.metadata().size(), 6u);
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetUint("llama.block_count"), 2u);
  EXPECT_EQ(*f.GetFloat("llama.rope.freq_base"), 10000.0);
  EXPECT_EQ(*f.GetBool("flag"), true);
  auto tokens = f.GetArray("tokenizer.ggml.tokens", ValueType::kString);
  ASSERT_TRUE(tokens.ok());
  ASSERT_EQ((*tokens)->elements.size(), 3u);
  EXPECT_EQ(*(*tokens)->elements[2].AsString(), "bb");
  EXPECT_EQ(f.GetString("missing").status().code(), StatusCode::kNotFound);
  EXPECT_THAT(f.GetString("llama.block_count").status().message(),
              HasSubstr("\"llama.block_count\" has type UINT32, expected STRING"));
  ASSERT_EQ(f.tensors().size(), 2u);
  const TensorInfo* w = f.FindTensor("w");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->ShapeString(), "[16, 4]");
  EXPECT_EQ(w->num_bytes, 256u);
  float v;
  std::memcpy(&v, w->data + 4 * 17, 4);
  EXPECT_EQ(v, 17.0f);
  const TensorInfo* q = f.FindTensor("q");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->offset, 256u);
  EXPECT_EQ(q->num_bytes, 36u);
  EXPECT_EQ(f.data_offset() % 32, 0u);
}

TEST(GgufFileTest, NestedArrays) {
  GgufWriter w;
  std::vector<uint8_t> payload;
  auto put32 = [&](uint32_t v) { payload.insert(payload.end(), (uint8_t*)&v, (uint8_t*)&v + 4); };
  auto put64 = [&](uint64_t v) { payload.insert(payload.end(), (uint8_t*)&v, (uint8_t*)&v + 8); };
  put32(static_cast<uint32_t>(ValueType::kArray));  // array of arrays
  put64(2);
  put32(static_cast<uint32_t>(ValueType::kInt16));
  put64(1);
  payload.push_back(0xff);
  payload.push_back(0xff);  // int16 -1
  put32(static_cast<uint32_t>(ValueType::kFloat64));
  put64(1);
  put64(0x4000000000000000ull);  // 2.0
  w.SetRaw("nested", ValueType::kArray, payload);
  const auto bytes = w.Serialize();
  auto file = GgufFile::Parse("nested.gguf", bytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const Array* outer = (*file)->Find("nested")->AsArray();
  ASSERT_NE(outer, nullptr);
  ASSERT_EQ(outer->elements.size(), 2u);
  EXPECT_EQ(*outer->elements[0].AsArray()->elements[0].AsInt64(), -1);
  EXPECT_EQ(*outer->elements[1].AsArray()->elements[0].AsDouble(), 2.0);
  EXPECT_EQ((*file)->Find("nested")->ToString(), "[[-1], [2]]");
}

TEST(GgufFileTest, EveryTruncationIsAnErrorNamingTheOffset) {
  const std::vector<uint8_t> bytes = SmallFile();
  // Cut at every length up to the end of the tensor data (the last tensor ends
  // before the final padding).
  const size_t data_end = bytes.size();
  for (size_t len = 0; len < data_end - 28; ++len) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + len);
    auto file = GgufFile::Parse("cut.gguf", cut);
    ASSERT_FALSE(file.ok()) << "length " << len;
    EXPECT_THAT(file.status().message(), HasSubstr("cut.gguf: "));
    EXPECT_THAT(file.status().message(), HasSubstr(" at offset "));
  }
}

// Patches a copy of `bytes` at `offset` with `value`.
template <typename T>
std::vector<uint8_t> Patched(std::vector<uint8_t> bytes, size_t offset, T value) {
  std::memcpy(bytes.data() + offset, &value, sizeof(T));
  return bytes;
}

size_t FindBytes(const std::vector<uint8_t>& hay, const std::string& needle) {
  auto it = std::search(hay.begin(), hay.end(), needle.begin(), needle.end());
  EXPECT_NE(it, hay.end()) << needle;
  return static_cast<size_t>(it - hay.begin());
}

TEST(GgufFileTest, HostileHeadersAreRejectedBeforeAllocation) {
  const std::vector<uint8_t> good = SmallFile();
  struct Case {
    std::vector<uint8_t> bytes;
    std::string expected;
  };
  const size_t tok_key = FindBytes(good, "tokenizer.ggml.tokens");
  const size_t tok_count = tok_key + 21 + 4 + 4;  // key, value type, element type
  const size_t w_name = FindBytes(good, std::string("\x01\0\0\0\0\0\0\0w", 9)) + 8;
  std::vector<Case> cases = {
      {Patched<uint32_t>(good, 0, 0x12345678), "not a GGUF file"},
      {Patched<uint32_t>(good, 4, 1), "version 1 is not supported"},
      {Patched<uint32_t>(good, 4, 0x03000000), "big-endian"},
      {Patched<uint64_t>(good, 8, 1ull << 40), "tensor_count"},
      {Patched<uint64_t>(good, 16, 1ull << 19), "cannot fit"},
      {Patched<uint64_t>(good, tok_key - 8, 1ull << 62), "exceeds the limit"},
      {Patched<uint64_t>(good, tok_count, 1ull << 40), "cannot fit"},
      {Patched<uint32_t>(good, tok_key + 21, 99), "unknown value type 99"},
      {Patched<uint32_t>(good, w_name + 1, 7), "n_dims 7"},
      {Patched<uint64_t>(good, w_name + 5, 0), "not a positive int64"},
      {Patched<uint64_t>(good, w_name + 5, 1ull << 40), "extends past the end"},
      {Patched<uint64_t>(good, w_name + 5, 15),
       "not a multiple"},  // 15x4 F32 fine, check offsets below
      {Patched<uint32_t>(good, w_name + 21, 4), "unknown tensor type id 4"},
      {Patched<uint32_t>(good, w_name + 21, 63), "type id 63 (Q3_NL) is a KV page type"},
      {Patched<uint64_t>(good, w_name + 25, 3), "not a multiple of the alignment"},
      {Patched<uint64_t>(good, w_name + 25, 1ull << 62), "extends past the end"},
  };
  // Case 12 (row 15 of F32) is legal for F32; use a Q4_0 row instead.
  const size_t q_name = FindBytes(good, std::string("\x01\0\0\0\0\0\0\0q", 9)) + 8;
  cases[11] = {Patched<uint64_t>(good, q_name + 5, 48), "not a multiple of the Q4_0 block size 32"};
  for (size_t i = 0; i < cases.size(); ++i) {
    auto file = GgufFile::Parse("bad.gguf", cases[i].bytes);
    ASSERT_FALSE(file.ok()) << "case " << i;
    EXPECT_THAT(file.status().message(), HasSubstr(cases[i].expected)) << "case " << i;
    EXPECT_THAT(file.status().message(), HasSubstr("bad.gguf: ")) << "case " << i;
  }
}

TEST(GgufFileTest, DuplicateKeysAndBadAlignment) {
  GgufWriter w;
  w.SetRaw("general.alignment", ValueType::kUint32, {3, 0, 0, 0});
  auto file = GgufFile::Parse("a.gguf", w.Serialize());
  ASSERT_FALSE(file.ok());
  EXPECT_THAT(file.status().message(), HasSubstr("not a power of two"));

  GgufWriter d;
  d.SetUint32("k", 1);
  auto bytes = d.Serialize();
  // Duplicate the single entry by hand: bump the count and append it again.
  const std::vector<uint8_t> entry(bytes.begin() + 24, bytes.begin() + 24 + 8 + 1 + 4 + 4);
  bytes.resize(24 + entry.size());
  bytes.insert(bytes.end(), entry.begin(), entry.end());
  bytes = Patched<uint64_t>(bytes, 16, 2);
  auto dup = GgufFile::Parse("d.gguf", bytes);
  ASSERT_FALSE(dup.ok());
  EXPECT_THAT(dup.status().message(), HasSubstr("duplicate key"));
}

TEST(GgufFileTest, CustomAlignmentIsHonoured) {
  GgufWriter w(64);
  std::vector<uint8_t> a(4 * 3, 1), b(4 * 5, 2);
  ASSERT_TRUE(w.AddTensor("a", TensorType::kF32, {3}, a).ok());
  ASSERT_TRUE(w.AddTensor("b", TensorType::kF32, {5}, b).ok());
  const auto bytes = w.Serialize();
  auto file = GgufFile::Parse("al.gguf", bytes);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  EXPECT_EQ((*file)->alignment(), 64u);
  EXPECT_EQ((*file)->data_offset() % 64, 0u);
  EXPECT_EQ((*file)->FindTensor("b")->offset, 64u);
  EXPECT_EQ((*file)->FindTensor("b")->data[0], 2);
}

TEST(GgufFileTest, OpenMissingFileIsNotFound) {
  auto file = GgufFile::Open("/nonexistent/model.gguf");
  ASSERT_FALSE(file.ok());
  EXPECT_EQ(file.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(file.status().message(), HasSubstr("/nonexistent/model.gguf"));
}

TEST(GgufFileTest, ReadsRealStories260K) {
  const std::string path = kShared + "/models/stories260K.gguf";
  ASSERT_TRUE(std::filesystem::exists(path))
      << path << " is missing: the tests need ../shared/models (see README)";
  auto file = GgufFile::Open(path);
  ASSERT_TRUE(file.ok()) << file.status().ToString();
  const GgufFile& f = **file;
  // Values from ../shared/golden/stories260K/gguf_meta.json (llama.cpp's reader).
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.metadata().size(), 19u);
  EXPECT_EQ(f.tensors().size(), 48u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.data_offset(), 14176u);
  EXPECT_EQ(f.file_size(), 1185376u);
  EXPECT_EQ(*f.GetString("general.architecture"), "llama");
  EXPECT_EQ(*f.GetUint("llama.embedding_length"), 64u);
  auto tokens = f.GetArray("tokenizer.ggml.tokens", ValueType::kString);
  ASSERT_TRUE(tokens.ok());
  EXPECT_EQ((*tokens)->elements.size(), 512u);
  EXPECT_EQ(*(*tokens)->elements[1].AsString(), "<s>");
  const TensorInfo* emb = f.FindTensor("token_embd.weight");
  ASSERT_NE(emb, nullptr);
  EXPECT_EQ(emb->ShapeString(), "[64, 512]");
  EXPECT_EQ(emb->type(), TensorType::kF32);
}

}  // namespace
}  // namespace kvmesh::gguf
