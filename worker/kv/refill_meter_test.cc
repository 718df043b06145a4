#include "worker/kv/refill_meter.h"

#include <gtest/gtest.h>

#include <cstdint>

namespace kvmesh {
namespace {

TEST(RefillMeterTest, ACacheWithRoomRefillsNothing) {
  RefillMeter<int64_t> m(100);
  EXPECT_EQ(m.ratio(), 0);
  for (int64_t k = 0; k < 1000; ++k) EXPECT_FALSE(m.Stored(k));
  EXPECT_EQ(m.ratio(), 0);
}

TEST(RefillMeterTest, ABlockStoredAgainSoonAfterItsEvictionIsARefill) {
  RefillMeter<int64_t> m(100);
  for (int64_t k = 0; k < 10; ++k) m.Stored(k);
  m.Evicted(3);
  EXPECT_TRUE(m.Stored(3));
  EXPECT_FALSE(m.Stored(3)) << "a refill is counted once";
  EXPECT_GT(m.ratio(), 0.05);
  EXPECT_LT(m.ratio(), 0.15);  // one of 12 stores
}

// A cache of 100 blocks cycling through 150 keys in order (least recently
// used evicts each key 50 stores before it comes back): every store after
// the first round is a refill, and the ratio tends to 1.
TEST(RefillMeterTest, ACacheCyclingThroughMoreThanItHoldsTendsToOne) {
  RefillMeter<int64_t> m(100);
  std::vector<int64_t> cache;
  for (int round = 0; round < 20; ++round) {
    for (int64_t k = 0; k < 150; ++k) {
      m.Stored(k);
      cache.push_back(k);
      if (cache.size() > 100) {
        m.Evicted(cache.front());
        cache.erase(cache.begin());
      }
    }
  }
  EXPECT_GT(m.ratio(), 0.95);
  // Then a working set that fits: the ratio decays over about a turnover
  // or two of the cache.
  for (int round = 0; round < 6; ++round) {
    for (int64_t k = 1000; k < 1050; ++k) m.Stored(k + round * 50);
  }
  EXPECT_LT(m.ratio(), 0.1);
}

// Evictions are remembered for one turnover: a key evicted more than
// `capacity` evictions ago is forgotten, and its return is no refill.
TEST(RefillMeterTest, RemembersOneTurnoverOfEvictions) {
  RefillMeter<int64_t> m(4);
  for (int64_t k = 0; k < 10; ++k) m.Evicted(k);
  EXPECT_EQ(m.remembered(), 4);
  EXPECT_FALSE(m.Stored(5)) << "evicted 5 evictions ago, past a turnover of 4";
  EXPECT_TRUE(m.Stored(6));
  // Evicted again: one memory of it, not two.
  m.Evicted(9);
  m.Evicted(9);
  EXPECT_EQ(m.remembered(), 3);
  EXPECT_TRUE(m.Stored(9));
  EXPECT_FALSE(m.Stored(9));
}

}  // namespace
}  // namespace kvmesh
