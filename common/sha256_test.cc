#include "common/sha256.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

TEST(Sha256Test, KnownVectors) {
  EXPECT_EQ(Sha256Hex({}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const std::string abc = "abc";
  EXPECT_EQ(Sha256Hex({reinterpret_cast<const uint8_t*>(abc.data()), abc.size()}),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256Test, VerifiesArgumentAndSidecar) {
  const std::string path = std::filesystem::temp_directory_path() / "kvmesh_sha_test.bin";
  { std::ofstream(path) << "abc"; }
  const std::string good = "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
  EXPECT_TRUE(VerifySha256(path, good).ok());
  auto bad = VerifySha256(path, std::string(64, '0'));
  ASSERT_FALSE(bad.ok());
  EXPECT_THAT(bad.status().message(), HasSubstr("SHA-256 mismatch"));
  EXPECT_THAT(VerifySha256(path, "xyz").status().message(), HasSubstr("not a 64-digit hex"));
  std::remove((path + ".sha256").c_str());
  EXPECT_EQ(VerifySha256(path, "").status().code(), StatusCode::kNotFound);
  { std::ofstream(path + ".sha256") << good << "  kvmesh_sha_test.bin\n"; }
  EXPECT_TRUE(VerifySha256(path, "").ok());
  std::remove(path.c_str());
  std::remove((path + ".sha256").c_str());
}

}  // namespace
}  // namespace kvmesh
