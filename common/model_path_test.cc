#include "common/model_path.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

namespace kvmesh {
namespace {

using ::testing::EndsWith;
using ::testing::HasSubstr;

TEST(ModelPathTest, UserPathMustExist) {
  auto p = ResolveModelPath("/no/such/model.gguf");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("/no/such/model.gguf: model file not found"));
}

TEST(ModelPathTest, FindsTheDefaultInShared) {
  auto p = ResolveModelPath("");
  ASSERT_TRUE(p.ok()) << p.status().ToString();
  EXPECT_THAT(*p, EndsWith("models/stories260K.gguf"));
}

TEST(ModelPathTest, ErrorListsWhereItLooked) {
  auto p = ResolveModelPath("", "no-such-default.gguf");
  ASSERT_FALSE(p.ok());
  EXPECT_THAT(p.status().message(), HasSubstr("shared/models/no-such-default.gguf"));
  EXPECT_THAT(p.status().message(), HasSubstr("models/no-such-default.gguf"));
}

TEST(ModelPathTest, EnvDirComesFirst) {
  const auto dir = std::filesystem::temp_directory_path() / "kvmesh_model_dir_test";
  std::filesystem::create_directories(dir);
  {
    std::FILE* f = std::fopen((dir / "x.gguf").c_str(), "w");
    std::fclose(f);
  }
  setenv("KVMESH_MODEL_DIR", dir.c_str(), 1);
  auto p = ResolveModelPath("", "x.gguf");
  unsetenv("KVMESH_MODEL_DIR");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(*p, (dir / "x.gguf").string());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kvmesh
