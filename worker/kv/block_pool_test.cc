#include "worker/kv/block_pool.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kvmesh {
namespace {

std::vector<int32_t> Toks(int first, int n = 4) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

BlockHash H(int i) {
  BlockHash h;
  h.bytes[0] = static_cast<uint8_t>(i);
  h.bytes[15] = 0xaa;
  return h;
}

TEST(BlockPoolTest, AllocatesInOrderAndRefusesWhenShort) {
  BlockPool pool(4, 4);
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(3, &got));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(pool.num_free(), 1);
  EXPECT_EQ(pool.ref_count(1), 1);
  std::vector<int32_t> more;
  EXPECT_FALSE(pool.Allocate(2, &more));
  EXPECT_TRUE(more.empty());
  EXPECT_EQ(pool.num_free(), 1);
}

TEST(BlockPoolTest, ReleasedBlocksAreReusedLeastRecentlyUsedFirst) {
  BlockPool pool(4, 4);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(4, &a));
  pool.Release(std::vector<int32_t>{2});
  pool.Release(std::vector<int32_t>{0, 3});
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.Allocate(3, &b));
  EXPECT_EQ(b, (std::vector<int32_t>{2, 0, 3}));
}

TEST(BlockPoolTest, CachedFreeBlocksHitUntilEvicted) {
  BlockPool pool(3, 4);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(2, &a));
  pool.Cache(a[0], H(1), std::nullopt, Toks(10));
  pool.Cache(a[1], H(2), H(1), Toks(20));
  const auto events = pool.TakeEvents();
  ASSERT_EQ(events.size(), 1u);  // one chain: merged into one Stored event
  EXPECT_EQ(events[0].kind, KvEvent::Kind::kStored);
  EXPECT_EQ(events[0].hashes, (std::vector<BlockHash>{H(1), H(2)}));
  EXPECT_FALSE(events[0].parent.has_value());

  pool.Release(std::vector<int32_t>{a[1], a[0]});  // tail first
  EXPECT_EQ(pool.num_free(), 3);
  EXPECT_EQ(pool.num_free_cached(), 2);
  EXPECT_EQ(pool.FindCached(H(1), Toks(10)), a[0]);
  // Same hash, different tokens (a collision): never a hit.
  EXPECT_EQ(pool.FindCached(H(1), Toks(11)), std::nullopt);

  // A hit takes the block out of the free list.
  pool.Acquire(a[0]);
  EXPECT_EQ(pool.ref_count(a[0]), 1);
  EXPECT_EQ(pool.num_free(), 2);
  EXPECT_EQ(pool.num_free_cached(), 1);

  // Allocation evicts lazily: block 2 (never cached) first, then block 1.
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.Allocate(1, &b));
  EXPECT_EQ(b, (std::vector<int32_t>{2}));
  EXPECT_TRUE(pool.TakeEvents().empty());
  ASSERT_TRUE(pool.Allocate(1, &b));
  EXPECT_EQ(b[1], a[1]);
  const auto removed = pool.TakeEvents();
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].kind, KvEvent::Kind::kRemoved);
  EXPECT_EQ(removed[0].hashes, (std::vector<BlockHash>{H(2)}));
  EXPECT_EQ(pool.FindCached(H(2), Toks(20)), std::nullopt);
}

TEST(BlockPoolTest, RemovalOnlyWhenTheLastCopyGoes) {
  BlockPool pool(2, 4);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(2, &a));
  pool.Cache(a[0], H(7), std::nullopt, Toks(1));
  pool.Cache(a[1], H(7), std::nullopt, Toks(1));  // a duplicate page
  EXPECT_EQ(pool.TakeEvents().size(), 1u);        // announced once
  EXPECT_EQ(pool.num_cached_hashes(), 1u);
  pool.Release(a);
  std::vector<int32_t> b;
  ASSERT_TRUE(pool.Allocate(1, &b));  // evicts one copy
  EXPECT_TRUE(pool.TakeEvents().empty());
  EXPECT_EQ(pool.FindCached(H(7), Toks(1)), a[1]);
  ASSERT_TRUE(pool.Allocate(1, &b));  // evicts the last copy
  const auto ev = pool.TakeEvents();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvEvent::Kind::kRemoved);
  EXPECT_EQ(ev[0].hashes, (std::vector<BlockHash>{H(7)}));
}

TEST(BlockPoolTest, ClearCacheForgetsEverything) {
  BlockPool pool(2, 4);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(2, &a));
  pool.Cache(a[0], H(1), std::nullopt, Toks(1));
  pool.Release(std::vector<int32_t>{a[0]});
  (void)pool.TakeEvents();
  EXPECT_EQ(pool.ClearCache(), 1);
  EXPECT_EQ(pool.num_free_cached(), 0);
  EXPECT_EQ(pool.FindCached(H(1), Toks(1)), std::nullopt);
  const auto ev = pool.TakeEvents();
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0].kind, KvEvent::Kind::kAllCleared);
  EXPECT_TRUE(pool.SnapshotHashes().empty());
}

TEST(BlockPoolTest, LruOrderHoldsOverManyOperations) {
  // Property check: after random releases the allocation order equals the
  // release order.
  BlockPool pool(64, 1);
  std::vector<int32_t> all;
  ASSERT_TRUE(pool.Allocate(64, &all));
  std::vector<int32_t> order;
  for (int i = 0; i < 64; ++i) order.push_back((i * 37) % 64);
  for (int32_t b : order) pool.Release(std::vector<int32_t>{b});
  std::vector<int32_t> again;
  ASSERT_TRUE(pool.Allocate(64, &again));
  EXPECT_EQ(again, order);
}

}  // namespace
}  // namespace kvmesh

namespace kvmesh {
namespace {

// Retention: a retained free block is taken only once the ordinary free
// list runs short, and returns to the ordinary list's oldest end when its
// time passes.
TEST(BlockPoolRetentionTest, RetainedBlocksOutlastOthersUntilTheirTimePasses) {
  int64_t now = 0;
  BlockPool pool(4, 4, [&now] { return now; });
  std::vector<int32_t> all;
  ASSERT_TRUE(pool.Allocate(4, &all));
  pool.Cache(1, H(1), std::nullopt, Toks(0));
  pool.Retain(1, /*until_ms=*/1000);
  pool.Release(all);  // 0, 2, 3 ordinary; 1 retained
  EXPECT_EQ(pool.num_free(), 4);
  EXPECT_EQ(pool.num_free_retained(), 1);
  std::vector<int32_t> three;
  ASSERT_TRUE(pool.Allocate(3, &three));
  EXPECT_EQ(three, (std::vector<int32_t>{0, 2, 3}));
  EXPECT_TRUE(pool.FindCached(H(1), Toks(0)).has_value());  // kept
  pool.Release(three);
  // Under pressure the retained block goes too, last.
  std::vector<int32_t> four;
  ASSERT_TRUE(pool.Allocate(4, &four));
  EXPECT_EQ(four, (std::vector<int32_t>{0, 2, 3, 1}));
  EXPECT_FALSE(pool.FindCached(H(1), Toks(0)).has_value());
  // A reused block starts unretained.
  pool.Release(four);
  EXPECT_EQ(pool.num_free_retained(), 0);
}

TEST(BlockPoolRetentionTest, ExpiredRetentionGoesFirst) {
  int64_t now = 0;
  BlockPool pool(4, 4, [&now] { return now; });
  std::vector<int32_t> all;
  ASSERT_TRUE(pool.Allocate(4, &all));
  pool.Retain(2, 1000);
  pool.Release(all);
  // Retaining a block already free moves it too; a later time extends.
  pool.Retain(0, 500);
  pool.Retain(2, 300);  // shorter: 1000 stays
  EXPECT_EQ(pool.num_free_retained(), 2);
  now = 700;  // 0's time has passed, 2's has not
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(3, &got));
  EXPECT_EQ(got, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(pool.num_free_retained(), 1);
  // Retention that has already passed does not move a free block.
  pool.Retain(got[0], 100);
  pool.Release(got);
  EXPECT_EQ(pool.num_free_retained(), 1);
}

}  // namespace
}  // namespace kvmesh
