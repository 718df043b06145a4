#include "worker/service/worker_options.h"

#include <gtest/gtest.h>

namespace kvmesh {
namespace {

TEST(WorkerOptionsTest, KvEvictionTakesLruOrAdaptive) {
  WorkerOptions o;
  EXPECT_EQ(o.kv_eviction, "lru");
  EXPECT_TRUE(o.Validate().ok()) << o.Validate().message();
  o.kv_eviction = "adaptive";
  EXPECT_TRUE(o.Validate().ok()) << o.Validate().message();
  o.kv_eviction = "mru";
  const Status bad = o.Validate();
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.message(), "option kv_eviction: \"mru\" is not one of lru, adaptive");
}

}  // namespace
}  // namespace kvmesh
