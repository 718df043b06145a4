#include "worker/kv/adaptive_order.h"

#include <gtest/gtest.h>

namespace kvmesh {
namespace {

TEST(AdaptiveOrderTest, RemembersAtMostTheCacheSizeOfEachKind) {
  AdaptiveOrder<int> order(3);
  for (int k = 1; k <= 10; ++k) order.Evicted(k, /*reused=*/false);
  order.Evicted(20, /*reused=*/true);
  EXPECT_EQ(order.remembered(false), 3);
  EXPECT_EQ(order.remembered(true), 1);
  EXPECT_FALSE(order.Stored(1));  // forgotten: the oldest go first
  EXPECT_TRUE(order.Stored(10));
  EXPECT_FALSE(order.Stored(10));  // remembered once
  EXPECT_EQ(order.remembered(false), 2);
  // A key evicted again moves to its new kind.
  order.Evicted(9, /*reused=*/true);
  EXPECT_EQ(order.remembered(false), 1);
  EXPECT_EQ(order.remembered(true), 2);
}

TEST(AdaptiveOrderTest, StepsByTheOtherMemoryOverThisOne) {
  AdaptiveOrder<int> order(100);
  for (int k = 1; k <= 4; ++k) order.Evicted(k, false);
  order.Evicted(10, true);
  EXPECT_TRUE(order.Stored(10));  // 4 never-reused over 1 reused
  EXPECT_EQ(order.head_start(), 4);
  order.Evicted(11, true);
  order.Evicted(12, true);
  EXPECT_TRUE(order.Stored(1));  // 2 reused over 4 never-reused: at least 1
  EXPECT_EQ(order.head_start(), 3);
}

TEST(AdaptiveOrderTest, StaysBetweenZeroAndTheCacheSize) {
  AdaptiveOrder<int> order(2);
  order.Evicted(1, false);
  EXPECT_TRUE(order.Stored(1));
  EXPECT_EQ(order.head_start(), 0);
  for (int k = 2; k <= 3; ++k) order.Evicted(k, false);
  order.Evicted(4, true);
  EXPECT_TRUE(order.Stored(4));  // a step of 2
  EXPECT_EQ(order.head_start(), 2);
  order.Evicted(5, true);
  EXPECT_TRUE(order.Stored(5));
  EXPECT_EQ(order.head_start(), 2);  // capped
}

TEST(AdaptiveOrderTest, TheOlderHeadGoesReusedOnesCountedYounger) {
  AdaptiveOrder<int> order(10);
  EXPECT_FALSE(order.TakeNeverReused(std::nullopt, 4));
  EXPECT_TRUE(order.TakeNeverReused(9, std::nullopt));
  EXPECT_FALSE(order.TakeNeverReused(5, 4));  // least recently used
  EXPECT_TRUE(order.TakeNeverReused(4, 4));   // a tie: the never-reused one
  for (int k = 1; k <= 3; ++k) order.Evicted(k, false);
  order.Evicted(7, true);
  ASSERT_TRUE(order.Stored(7));
  ASSERT_EQ(order.head_start(), 3);
  EXPECT_TRUE(order.TakeNeverReused(7, 4));  // 4 counts as 7
  EXPECT_FALSE(order.TakeNeverReused(8, 4));
}

}  // namespace
}  // namespace kvmesh
