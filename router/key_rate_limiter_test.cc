#include "router/key_rate_limiter.h"

#include <gtest/gtest.h>

namespace kvmesh::router {
namespace {

TEST(KeyRateLimiterTest, EachKeyHasItsBurstThenItsRate) {
  double now = 100;
  KeyRateLimiter limiter(2, /*rate=*/2, /*burst=*/3, [&] { return now; });
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.Acquire(0), 0) << i;
  EXPECT_DOUBLE_EQ(limiter.Acquire(0), 0.5);  // one token every 0.5 s
  EXPECT_DOUBLE_EQ(limiter.Acquire(0), 0.5);  // a refusal takes nothing
  EXPECT_EQ(limiter.Acquire(1), 0);           // the other key is untouched
  now += 0.25;
  EXPECT_DOUBLE_EQ(limiter.Acquire(0), 0.25);
  now += 0.25;
  EXPECT_EQ(limiter.Acquire(0), 0);
  EXPECT_GT(limiter.Acquire(0), 0);
  now += 60;  // refills to the burst, no further
  for (int i = 0; i < 3; ++i) EXPECT_EQ(limiter.Acquire(0), 0) << i;
  EXPECT_GT(limiter.Acquire(0), 0);
}

TEST(KeyRateLimiterTest, RateZeroIsNoLimit) {
  KeyRateLimiter limiter(1, 0, 0, [] { return 0.0; });
  EXPECT_FALSE(limiter.enabled());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(limiter.Acquire(0), 0);
}

}  // namespace
}  // namespace kvmesh::router
