#include "worker/kv/kv_cache_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

std::unique_ptr<Model> Load(const std::string& file) {
  auto m = Model::Load(std::string(KVMESH_SHARED_DIR) + "/models/" + file);
  EXPECT_TRUE(m.ok()) << m.status().ToString() << " (needs ../shared/models)";
  return m.ok() ? std::move(m).value() : nullptr;
}

TEST(KvCacheOptionsTest, QuantizedPagesAreRotatedByDefault) {
  auto model = Load("tinystories-d64.gguf");  // head size 64
  ASSERT_NE(model, nullptr);
  KvCacheOptions o;
  auto f16 = BuildKvLayout(o, *model);
  ASSERT_TRUE(f16.ok());
  EXPECT_FALSE(f16->k_rotated);
  EXPECT_FALSE(f16->v_rotated);
  o.type = "q4_0";
  auto q4 = BuildKvLayout(o, *model);
  ASSERT_TRUE(q4.ok());
  EXPECT_TRUE(q4->k_rotated);
  EXPECT_TRUE(q4->v_rotated);
  o.type_v = "f16";
  auto mixed = BuildKvLayout(o, *model);
  ASSERT_TRUE(mixed.ok());
  EXPECT_TRUE(mixed->k_rotated);
  EXPECT_FALSE(mixed->v_rotated);
  o.rotate_k = KvRotation::kOff;
  EXPECT_FALSE(BuildKvLayout(o, *model)->k_rotated);
}

TEST(KvCacheOptionsTest, ErrorsNameTheOption) {
  auto model = Load("stories260K.gguf");  // head size 8
  ASSERT_NE(model, nullptr);
  KvCacheOptions o;
  o.type = "q9_9";
  EXPECT_THAT(BuildKvLayout(o, *model).status().message(), HasSubstr("--kv-type q9_9"));
  o.type = "q8_0";
  EXPECT_THAT(BuildKvLayout(o, *model).status().message(),
              HasSubstr("does not divide the head size 8"));
  o.type = "f16";
  o.rounding = "sloppy";
  EXPECT_THAT(BuildKvLayout(o, *model).status().message(), HasSubstr("--kv-rounding sloppy"));
  EXPECT_FALSE(ParseKvRotation("maybe").ok());
  EXPECT_EQ(*ParseKvRotation("off"), KvRotation::kOff);
}

}  // namespace
}  // namespace kvmesh
