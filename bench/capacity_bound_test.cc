#include "bench/capacity_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <numeric>
#include <random>
#include <vector>

#include "absl/hash/hash.h"

namespace kvmesh::bench {
namespace {

using Bound = CapacityBound<int, absl::Hash<int>>;

int64_t Sum(const std::vector<int64_t>& v) { return std::accumulate(v.begin(), v.end(), 0LL); }

TEST(CapacityBoundTest, KeepsWhatIsUsedSoonestWhereLeastRecentlyUsedKeepsNothing) {
  // A B C A B with room for two: least recently used drops A for C, then B
  // for A, and hits nothing; the optimum declines C and hits A and B.
  Bound b(2);
  for (int k : {1, 2, 3, 1, 2}) b.Request({k}, 1);
  EXPECT_EQ(b.Solve(), (std::vector<int64_t>{0, 0, 0, 1, 1}));
}

TEST(CapacityBoundTest, DeclinesABlockNeededLaterThanWhatItHolds) {
  Bound b(1);
  for (int k : {1, 2, 1, 2, 1}) b.Request({k}, 1);
  EXPECT_EQ(b.Solve(), (std::vector<int64_t>{0, 0, 1, 0, 1}));
}

TEST(CapacityBoundTest, CountsOnlyReusableBlocksAndKeepsStoredOnes) {
  Bound b(4);
  b.Request({1, 2, 3}, 2);  // block 3 is computed, never served from cache here
  b.Stored({4});            // a reply's block, kept without being asked for
  const int64_t last = b.Request({1, 2, 3, 4}, 4);
  EXPECT_EQ(last, 1);
  EXPECT_EQ(b.Solve(), (std::vector<int64_t>{0, 4}));
}

TEST(CapacityBoundTest, ARequestThatReusesNothingTakesNoRoom) {
  // Room for one block. Served, the request for `1` keeps it and the one
  // for `2` misses; failed (router_sessions offers it with nothing
  // reusable), it must not keep `1` at the cost of `2`.
  for (const bool first_served : {true, false}) {
    Bound b(1);
    b.Stored({1});
    b.Stored({2});
    b.Request({1}, first_served ? 1 : 0);
    b.Request({2}, 1);
    EXPECT_EQ(b.Solve(),
              first_served ? (std::vector<int64_t>{1, 0}) : (std::vector<int64_t>{0, 1}));
  }
}

TEST(CapacityBoundTest, NoRoomServesNothingAndAmpleRoomServesEveryRepeat) {
  Bound none(0), ample(100);
  for (Bound* b : {&none, &ample}) {
    b->Request({1, 2}, 2);
    b->Request({1, 2, 3}, 3);
    b->Request({1, 5}, 2);
  }
  EXPECT_EQ(Sum(none.Solve()), 0);
  EXPECT_EQ(ample.Solve(), (std::vector<int64_t>{0, 2, 1}));
}

// The most hits any cache of `capacity` blocks could serve: after every
// event, it may hold any set of at most `capacity` of the blocks it held or
// was just offered. Exhaustive over sets of blocks 0..kKeys-1. An event
// with nothing reusable stands for a reply's stored blocks too.
constexpr int kKeys = 6;
int64_t BruteForce(const std::vector<std::pair<std::vector<int>, size_t>>& requests, int capacity) {
  constexpr int64_t kUnreachable = -1;
  std::vector<int64_t> best(1 << kKeys, kUnreachable);
  best[0] = 0;
  for (const auto& [blocks, reusable] : requests) {
    std::vector<int64_t> next(1 << kKeys, kUnreachable);
    int offered = 0;
    for (int k : blocks) offered |= 1 << k;
    for (int held = 0; held < (1 << kKeys); ++held) {
      if (best[held] == kUnreachable) continue;
      int64_t hits = 0;
      for (size_t i = 0; i < reusable; ++i) hits += (held >> blocks[i]) & 1;
      const int pool = held | offered;
      for (int keep = pool;; keep = (keep - 1) & pool) {
        if (__builtin_popcount(keep) <= capacity) {
          next[keep] = std::max(next[keep], best[held] + hits);
        }
        if (keep == 0) break;
      }
    }
    best = std::move(next);
  }
  return *std::max_element(best.begin(), best.end());
}

// Random traffic of up to ten events over six blocks, room for 0-3 of them:
// the bound equals the exhaustive optimum.
TEST(CapacityBoundTest, MatchesAnExhaustiveSearchOnRandomTraffic) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 2000; ++trial) {
    const int capacity = static_cast<int>(rng() % 4);
    std::vector<std::pair<std::vector<int>, size_t>> requests;
    Bound b(capacity);
    const int n = 3 + static_cast<int>(rng() % 8);
    for (int r = 0; r < n; ++r) {
      std::vector<int> blocks(kKeys);
      std::iota(blocks.begin(), blocks.end(), 0);
      std::shuffle(blocks.begin(), blocks.end(), rng);
      blocks.resize(1 + rng() % 3);
      if (rng() % 4 == 0) {  // a reply's blocks: offered, never served
        requests.push_back({blocks, 0});
        b.Stored(blocks);
        continue;
      }
      const size_t reusable = rng() % (blocks.size() + 1);
      requests.push_back({blocks, reusable});
      b.Request(blocks, reusable);
    }
    EXPECT_EQ(Sum(b.Solve()), BruteForce(requests, capacity)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace kvmesh::bench
