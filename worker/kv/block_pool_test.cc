#include "worker/kv/block_pool.h"

#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <string>

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

namespace kvmesh {
namespace {

// Adaptive eviction (KvEviction::kAdaptive, worker/kv/adaptive_order.h).

BlockHash Key(int k) {
  BlockHash h;
  std::memcpy(h.bytes.data(), &k, sizeof k);
  h.bytes[15] = 0x5b;
  return h;
}

// Serves one prompt of block keys as a worker does, one request at a time
// and one token per block: reuses the cached leading blocks, computes and
// caches the rest, and releases all of them tail first. Returns the blocks
// reused.
int Serve(BlockPool& pool, const std::vector<int>& keys) {
  std::vector<int32_t> table;
  size_t hit = 0;
  for (; hit < keys.size(); ++hit) {
    const auto block = pool.FindCached(Key(keys[hit]), std::vector<int32_t>{keys[hit]});
    if (!block) break;
    pool.Acquire(*block);
    pool.NoteReuse(*block);
    table.push_back(*block);
  }
  const int32_t fresh = static_cast<int32_t>(keys.size() - hit);
  EXPECT_TRUE(pool.Allocate(fresh, &table));
  for (size_t i = hit; i < keys.size(); ++i) {
    pool.Cache(table[i], Key(keys[i]),
               i == 0 ? std::nullopt : std::optional<BlockHash>(Key(keys[i - 1])),
               std::vector<int32_t>{keys[i]});
  }
  std::vector<int32_t> reversed(table.rbegin(), table.rend());
  pool.Release(reversed);
  return static_cast<int>(hit);
}

// The refill ratio (RefillMeter): sessions whose blocks fit the pool
// refill nothing; sessions that do not fit come back to find their blocks
// just evicted, and the ratio rises towards 1 (under either eviction order).
TEST(BlockPoolRefillTest, ThrashingSessionsRefillAndSessionsThatFitDoNot) {
  for (const KvEviction eviction : {KvEviction::kLru, KvEviction::kAdaptive}) {
    BlockPool fits(8, 1, BlockPool::SteadyNowMs, eviction);
    BlockPool thrashes(8, 1, BlockPool::SteadyNowMs, eviction);
    for (int round = 0; round < 20; ++round) {
      for (int s = 0; s < 3; ++s) {
        // Each turn adds a block to the session's context.
        std::vector<int> turn;
        for (int b = 0; b < 2 + round % 2; ++b) turn.push_back(100 * s + b);
        if (s < 2) Serve(fits, turn);
        std::vector<int> longer;
        for (int b = 0; b < 4; ++b) longer.push_back(100 * s + b);
        Serve(thrashes, longer);
      }
    }
    EXPECT_EQ(fits.refill_ratio(), 0);
    EXPECT_GT(thrashes.refill_ratio(), 0.9);
  }
}

TEST(AdaptiveEvictionTest, StartsAsLeastRecentlyUsed) {
  // Until an evicted block comes back, the head start is 0: adaptive
  // eviction evicts what least recently used does.
  for (const KvEviction eviction : {KvEviction::kLru, KvEviction::kAdaptive}) {
    BlockPool pool(4, 1, BlockPool::SteadyNowMs, eviction);
    EXPECT_EQ(Serve(pool, {1, 2}), 0);
    EXPECT_EQ(Serve(pool, {1, 2}), 2);  // 1 and 2 reused
    EXPECT_EQ(Serve(pool, {3}), 0);     // never reused, newer
    EXPECT_EQ(pool.num_cached_reused(), 2);
    // Three blocks: the empty one, then 2 and 1, older than 3.
    EXPECT_EQ(Serve(pool, {4, 5, 6}), 0);
    EXPECT_FALSE(pool.FindCached(Key(1), std::vector<int32_t>{1}).has_value());
    EXPECT_FALSE(pool.FindCached(Key(2), std::vector<int32_t>{2}).has_value());
    EXPECT_TRUE(pool.FindCached(Key(3), std::vector<int32_t>{3}).has_value());
    EXPECT_EQ(pool.adaptive_head_start(), 0);
  }
}

TEST(AdaptiveEvictionTest, EvictedBlocksThatComeBackMoveTheHeadStart) {
  BlockPool pool(4, 1, BlockPool::SteadyNowMs, KvEviction::kAdaptive);
  Serve(pool, {1});
  Serve(pool, {1});           // 1 reused
  Serve(pool, {2, 3, 4, 5});  // the whole pool: 1 evicted
  EXPECT_EQ(pool.num_cached_reused(), 0);
  // 1 comes back: a reused block was evicted too early. Its room evicts 5
  // (never reused). The head start rises by the never-reused memory (5)
  // over the reused one (1, the returning key counted): 1. 1 returns
  // counted as reused.
  EXPECT_EQ(Serve(pool, {1}), 0);
  EXPECT_FALSE(pool.FindCached(Key(5), std::vector<int32_t>{5}).has_value());
  EXPECT_EQ(pool.adaptive_head_start(), 1);
  EXPECT_EQ(pool.num_cached_reused(), 1);
  // 5 comes back, evicted never reused: back to 0.
  EXPECT_EQ(Serve(pool, {5}), 0);
  EXPECT_EQ(pool.adaptive_head_start(), 0);
}

TEST(AdaptiveEvictionTest, RetainingAFreeReusedBlockMovesItToTheRetainedList) {
  int64_t now = 0;
  BlockPool pool(
      2, 1, [&now] { return now; }, KvEviction::kAdaptive);
  Serve(pool, {1});
  Serve(pool, {1});  // reused, now free
  const auto block = pool.FindCached(Key(1), std::vector<int32_t>{1});
  ASSERT_TRUE(block.has_value());
  pool.Retain(*block, 1000);
  EXPECT_EQ(pool.num_free_retained(), 1);
}

TEST(AdaptiveEvictionTest, ClearCacheEmptiesTheReusedList) {
  BlockPool pool(3, 1, BlockPool::SteadyNowMs, KvEviction::kAdaptive);
  Serve(pool, {1});
  Serve(pool, {1});
  EXPECT_EQ(pool.num_cached_reused(), 1);
  pool.ClearCache();
  EXPECT_EQ(pool.num_cached_reused(), 0);
  EXPECT_EQ(pool.num_free_cached(), 0);
  std::vector<int32_t> all;
  ASSERT_TRUE(pool.Allocate(3, &all));  // every block still allocatable
}

TEST(AdaptiveEvictionTest, RetainedBlocksStillOutlastReusedOnes) {
  int64_t now = 0;
  BlockPool pool(
      3, 1, [&now] { return now; }, KvEviction::kAdaptive);
  std::vector<int32_t> a;
  ASSERT_TRUE(pool.Allocate(3, &a));
  for (int i = 0; i < 3; ++i) pool.Cache(a[i], Key(i), std::nullopt, std::vector<int32_t>{i});
  pool.NoteReuse(a[1]);
  pool.Retain(a[0], 1000);
  pool.Release(a);
  // Freed together (no block stored between): the never-reused block
  // first, then the reused one, the retained one last.
  std::vector<int32_t> got;
  ASSERT_TRUE(pool.Allocate(3, &got));
  EXPECT_EQ(got, (std::vector<int32_t>{a[2], a[1], a[0]}));
}

// Many tenants share long contexts; each user sends two turns, the second
// extending the first, and then leaves. The contexts just fit; the users'
// own blocks do not. Least recently used keeps the newest blocks, which
// include second turns nobody comes back for, and evicts contexts the next
// users need; adaptive eviction keeps the reused contexts.
std::vector<std::vector<int>> TwoTurnTraffic(int tenants, int context, int users) {
  std::vector<std::vector<int>> prompts;
  int next_key = 1 << 20;  // users' own blocks
  std::vector<std::vector<int>> first(tenants * users);
  for (int s = 0; s < tenants * users + 4; ++s) {
    if (s < tenants * users) {
      const int t = s % tenants;
      std::vector<int> p;
      for (int i = 0; i < context; ++i) p.push_back(t * 1000 + i);
      for (int i = 0; i < 3; ++i) p.push_back(next_key++);
      first[s] = p;
      prompts.push_back(p);
    }
    if (s >= 4) {  // session s - 4's second turn
      std::vector<int> p = first[s - 4];
      for (int i = 0; i < 4; ++i) p.push_back(next_key++);
      prompts.push_back(p);
    }
  }
  return prompts;
}

// Agent sessions: each turn resends the session so far and adds blocks;
// sessions of a few turns, taken in random order, end and are replaced.
std::vector<std::vector<int>> AgentTraffic(int live, int turns, int per_turn, int requests) {
  std::vector<std::vector<int>> sessions(live), prompts;
  std::vector<int> turn(live, 0);
  std::mt19937 rng(5);
  int next_key = 1;
  for (int r = 0; r < requests; ++r) {
    const int s = static_cast<int>(rng() % live);
    if (turn[s] == turns) {
      sessions[s].clear();
      turn[s] = 0;
    }
    for (int i = 0; i < per_turn; ++i) sessions[s].push_back(next_key++);
    ++turn[s];
    prompts.push_back(sessions[s]);
  }
  return prompts;
}

double HitRatio(const std::vector<std::vector<int>>& prompts, int32_t blocks, KvEviction eviction) {
  BlockPool pool(blocks, 1, BlockPool::SteadyNowMs, eviction);
  int64_t hits = 0, total = 0;
  for (const auto& p : prompts) {
    hits += Serve(pool, p);
    total += static_cast<int64_t>(p.size());
  }
  return static_cast<double>(hits) / static_cast<double>(total);
}

TEST(AdaptiveEvictionTest, KeepsSharedContextsThatLeastRecentlyUsedLoses) {
  const auto prompts = TwoTurnTraffic(/*tenants=*/16, /*context=*/64, /*users=*/8);
  const double lru = HitRatio(prompts, 16 * 64, KvEviction::kLru);
  const double adaptive = HitRatio(prompts, 16 * 64, KvEviction::kAdaptive);
  RecordProperty("lru", std::to_string(lru));
  RecordProperty("adaptive", std::to_string(adaptive));
  EXPECT_GT(adaptive, lru + 0.05) << "lru " << lru << ", adaptive " << adaptive;
}

TEST(AdaptiveEvictionTest, KeepsUpWithLeastRecentlyUsedOnAgentSessions) {
  const auto prompts = AgentTraffic(/*live=*/24, /*turns=*/8, /*per_turn=*/6, /*requests=*/4000);
  for (const int32_t blocks : {200, 400, 800}) {
    const double lru = HitRatio(prompts, blocks, KvEviction::kLru);
    const double adaptive = HitRatio(prompts, blocks, KvEviction::kAdaptive);
    RecordProperty("lru_" + std::to_string(blocks), std::to_string(lru));
    RecordProperty("adaptive_" + std::to_string(blocks), std::to_string(adaptive));
    EXPECT_GE(adaptive, lru - 0.05)
        << blocks << " blocks: lru " << lru << ", adaptive " << adaptive;
  }
}

}  // namespace
}  // namespace kvmesh
