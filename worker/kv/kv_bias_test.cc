// KvBias: the file format round-trips, is pinned byte for byte, and every
// kind of bad file or wrong model is a clear error.
#include "worker/kv/kv_bias.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "common/sha256.h"

namespace kvmesh {
namespace {

KvBias Small() {
  // 1 layer, 2 heads, 2 channels.
  return KvBias("abc123", "tiny", 1, 2, 2, 7, {0.5f, -1.0f, 2.0f, 0.25f});
}

TEST(KvBiasTest, SerializedBytesArePinned) {
  const std::vector<uint8_t> bytes = Small().Serialize();
  // 8 magic + 4 version + 3 x 4 shape + 8 tokens + (4 + 6) identity + (4 + 4)
  // name + 4 x 4 means.
  ASSERT_EQ(bytes.size(), 66u);
  EXPECT_EQ(std::string(bytes.begin(), bytes.begin() + 8), "KVMKBIAS");
  EXPECT_EQ(bytes[8], 1);   // version
  EXPECT_EQ(bytes[12], 1);  // n_layer
  EXPECT_EQ(bytes[16], 2);  // n_head_kv
  EXPECT_EQ(bytes[20], 2);  // head_dim
  EXPECT_EQ(bytes[24], 7);  // tokens
  EXPECT_EQ(bytes[32], 6);  // identity length
  EXPECT_EQ(std::string(bytes.begin() + 36, bytes.begin() + 42), "abc123");
  EXPECT_EQ(Sha256Hex(bytes), Sha256Hex(Small().Serialize()));
  // 0.5f little-endian right after the name.
  EXPECT_EQ(bytes[50], 0x00);
  EXPECT_EQ(bytes[53], 0x3F);
}

TEST(KvBiasTest, RoundTripsThroughAFile) {
  const std::string path =
      (std::filesystem::temp_directory_path() / "kvmesh_kv_bias_test.bin").string();
  ASSERT_TRUE(Small().Save(path).ok());
  auto loaded = KvBias::Load(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  const KvBias& b = **loaded;
  EXPECT_EQ(b.model_identity(), "abc123");
  EXPECT_EQ(b.model_name(), "tiny");
  EXPECT_EQ(b.n_layer(), 1);
  EXPECT_EQ(b.n_head_kv(), 2);
  EXPECT_EQ(b.head_dim(), 2);
  EXPECT_EQ(b.n_tokens(), 7u);
  EXPECT_EQ(b.Row(0, 1)[0], 2.0f);
  EXPECT_EQ(b.Row(0, 1)[1], 0.25f);
  std::filesystem::remove(path);
}

TEST(KvBiasTest, BadFilesAreClearErrors) {
  std::vector<uint8_t> bytes = Small().Serialize();
  EXPECT_EQ(KvBias::Parse(std::span(bytes).first(22), "x.bin").status().message(),
            "x.bin: truncated or corrupt header at byte 20");
  std::vector<uint8_t> extra = bytes;
  extra.push_back(0);
  EXPECT_EQ(KvBias::Parse(extra, "x.bin").status().message(),
            "x.bin: expected 16 bytes of means after the header (1 layers x 2 KV heads x 2 "
            "channels), found 17");
  std::vector<uint8_t> wrong_magic = bytes;
  wrong_magic[0] = 'X';
  EXPECT_EQ(KvBias::Parse(wrong_magic, "x.bin").status().message(),
            "x.bin: not a KV bias file (no KVMKBIAS header); write one with `kvmesh "
            "kv-calibrate`");
  std::vector<uint8_t> version2 = bytes;
  version2[8] = 2;
  EXPECT_EQ(KvBias::Parse(version2, "x.bin").status().message(),
            "x.bin: KV bias file version 2 is not supported (this build reads version 1); re-run "
            "`kvmesh kv-calibrate`");
  std::vector<uint8_t> nan = bytes;
  nan[62] = 0xFF;
  nan[63] = 0xFF;
  nan[64] = 0xFF;
  nan[65] = 0x7F;
  EXPECT_EQ(KvBias::Parse(nan, "x.bin").status().message(), "x.bin: mean 3 is not a finite number");
  EXPECT_EQ(KvBias::Load("/nonexistent/bias.bin").status().code(), StatusCode::kNotFound);
}

TEST(KvBiasTest, OtherModelIsRefusedNamingBoth) {
  const KvBias bias = Small();
  EXPECT_TRUE(bias.CheckModel("abc123", "tiny", 1, 2, 2).ok());
  EXPECT_EQ(bias.CheckModel("fff999", "other", 1, 2, 2).message(),
            "the KV bias table was measured on model 'tiny' (identity abc123), not on the loaded "
            "model 'other' (identity fff999); run `kvmesh kv-calibrate` with this model");
  EXPECT_EQ(bias.CheckModel("abc123", "tiny", 2, 2, 2).message(),
            "the KV bias table has 1 layers x 2 KV heads x 2 channels but model 'tiny' has 2 "
            "layers x 2 KV heads x 2 channels");
}

}  // namespace
}  // namespace kvmesh
