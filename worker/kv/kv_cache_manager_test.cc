#include "worker/kv/kv_cache_manager.h"

#include <gtest/gtest.h>

#include <numeric>

namespace kvmesh {
namespace {

std::vector<int32_t> Prompt(int n, int first = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// The cached prefix a new sequence of `prompt` would get.
CachedPrefix Find(KvCacheManager& m, const BlockHash& root, const std::vector<int32_t>& prompt) {
  SequenceBlocks seq;
  seq.root = root;
  return m.FindCachedPrefix(&seq, prompt);
}

// Admits `prompt`, computes it fully, returns the sequence.
SequenceBlocks RunPrompt(KvCacheManager& m, const BlockHash& root,
                         const std::vector<int32_t>& prompt, int32_t* cached_tokens) {
  SequenceBlocks seq;
  seq.root = root;
  const CachedPrefix prefix = m.FindCachedPrefix(&seq, prompt);
  *cached_tokens = prefix.num_tokens();
  EXPECT_TRUE(m.AllocateSlots(&seq, static_cast<int32_t>(prompt.size()), &prefix));
  m.CommitComputed(&seq, prompt, static_cast<int32_t>(prompt.size()));
  return seq;
}

TEST(KvCacheManagerTest, SecondRequestReusesFullBlocksOfTheSharedPrefix) {
  KvCacheManager m(16, 4);
  const BlockHash root = RootHash("model");
  int32_t cached = -1;
  auto p1 = Prompt(10);
  SequenceBlocks s1 = RunPrompt(m, root, p1, &cached);
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(s1.table, (std::vector<int32_t>{0, 1, 2}));
  EXPECT_EQ(s1.num_cached_blocks, 2);  // only full blocks are cached

  auto p2 = Prompt(9);  // same first 9 tokens
  p2.push_back(7);
  p2.push_back(8);
  SequenceBlocks s2 = RunPrompt(m, root, p2, &cached);
  EXPECT_EQ(cached, 8);
  EXPECT_EQ(s2.table, (std::vector<int32_t>{0, 1, 3}));
  EXPECT_EQ(m.pool().ref_count(0), 2);
  EXPECT_EQ(m.pool().ref_count(1), 2);
  EXPECT_EQ(m.pool().ref_count(3), 1);

  m.Release(&s1);
  m.Release(&s2);
  EXPECT_EQ(m.pool().num_free(), 16);
  // Only blocks 0 and 1 are cached: the third blocks of both prompts (2 and
  // 3 tokens) never filled up.
  EXPECT_EQ(m.pool().num_free_cached(), 2);
}

TEST(KvCacheManagerTest, APrefixHitMarksItsBlocksReusedForAdaptiveEviction) {
  for (const KvEviction eviction : {KvEviction::kLru, KvEviction::kAdaptive}) {
    KvCacheManager m(16, 4, /*enable_prefix_caching=*/true, eviction);
    EXPECT_EQ(m.pool().eviction(), eviction);
    const BlockHash root = RootHash("model");
    int32_t cached = -1;
    SequenceBlocks s1 = RunPrompt(m, root, Prompt(10), &cached);
    EXPECT_EQ(m.pool().num_cached_reused(), 0);  // computed, not reused
    SequenceBlocks s2 = RunPrompt(m, root, Prompt(12), &cached);
    EXPECT_EQ(cached, 8);
    EXPECT_EQ(m.pool().num_cached_reused(), 2);  // the two blocks it hit
    m.Release(&s1);
    m.Release(&s2);
  }
}

TEST(KvCacheManagerTest, APreemptedSequenceFindingItsOwnBlocksIsNoReuse) {
  KvCacheManager m(16, 4, /*enable_prefix_caching=*/true, KvEviction::kAdaptive);
  const BlockHash root = RootHash("model");
  int32_t cached = -1;
  const auto prompt = Prompt(10);
  SequenceBlocks s = RunPrompt(m, root, prompt, &cached);
  m.Release(&s);  // preempted
  const CachedPrefix prefix = m.FindCachedPrefix(&s, prompt);
  EXPECT_EQ(prefix.num_tokens(), 8);
  ASSERT_TRUE(m.AllocateSlots(&s, static_cast<int32_t>(prompt.size()), &prefix));
  EXPECT_EQ(m.pool().num_cached_reused(), 0);
  m.Release(&s);
}

TEST(KvCacheManagerTest, AlwaysLeavesOneTokenToCompute) {
  KvCacheManager m(8, 4);
  const BlockHash root = RootHash("model");
  int32_t cached = -1;
  SequenceBlocks s1 = RunPrompt(m, root, Prompt(8), &cached);
  m.Release(&s1);
  // The identical prompt: 2 full blocks cached, but only 1 may be reused.
  const CachedPrefix again = Find(m, root, Prompt(8));
  EXPECT_EQ(again.num_tokens(), 4);
  // One more token: both blocks reused.
  EXPECT_EQ(Find(m, root, Prompt(9)).num_tokens(), 8);
}

TEST(KvCacheManagerTest, SaltsAndModelsNeverShare) {
  KvCacheManager m(8, 4);
  int32_t cached = -1;
  SequenceBlocks s = RunPrompt(m, RootHash("model", "tenant-a"), Prompt(9), &cached);
  EXPECT_EQ(Find(m, RootHash("model", "tenant-a"), Prompt(9)).num_tokens(), 8);
  EXPECT_EQ(Find(m, RootHash("model", "tenant-b"), Prompt(9)).num_tokens(), 0);
  EXPECT_EQ(Find(m, RootHash("model"), Prompt(9)).num_tokens(), 0);
  EXPECT_EQ(Find(m, RootHash("other", "tenant-a"), Prompt(9)).num_tokens(), 0);
  m.Release(&s);
}

TEST(KvCacheManagerTest, AllocationFailureChangesNothing) {
  KvCacheManager m(3, 4);
  SequenceBlocks a, b;
  a.root = b.root = RootHash("m");
  ASSERT_TRUE(m.AllocateSlots(&a, 8));
  EXPECT_FALSE(m.AllocateSlots(&b, 8));
  EXPECT_TRUE(b.table.empty());
  EXPECT_EQ(m.pool().num_free(), 1);
  // Growing one token at a time takes a new block only at block boundaries.
  ASSERT_TRUE(m.AllocateSlots(&a, 9));
  EXPECT_EQ(a.table.size(), 3u);
  EXPECT_FALSE(m.AllocateSlots(&a, 13));
  EXPECT_EQ(a.table.size(), 3u);
}

TEST(KvCacheManagerTest, CountingFreeCachedPrefixBlocksAgainstCapacity) {
  // 4 blocks: 2 cached (free) + 2 empty. A prompt reusing the 2 cached blocks
  // and needing 2 fresh ones fits exactly; needing 3 fresh does not.
  KvCacheManager m(4, 4);
  const BlockHash root = RootHash("m");
  int32_t cached = -1;
  SequenceBlocks s = RunPrompt(m, root, Prompt(8), &cached);
  m.Release(&s);
  auto longer = Prompt(17);
  CachedPrefix prefix = Find(m, root, longer);
  ASSERT_EQ(prefix.num_tokens(), 8);
  SequenceBlocks t;
  t.root = root;
  EXPECT_TRUE(m.AllocateSlots(&t, 16, &prefix));
  EXPECT_EQ(t.table.size(), 4u);
  m.Release(&t);
  prefix = Find(m, root, longer);
  SequenceBlocks u;
  u.root = root;
  EXPECT_FALSE(m.AllocateSlots(&u, 17, &prefix));
  EXPECT_TRUE(u.table.empty());
  EXPECT_EQ(m.pool().num_free(), 4);
}

TEST(KvCacheManagerTest, EventsFollowTheCache) {
  KvCacheManager m(4, 4);
  const BlockHash root = RootHash("m");
  int32_t cached = -1;
  SequenceBlocks s = RunPrompt(m, root, Prompt(12), &cached);
  auto events = m.pool().TakeEvents();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].hashes, HashFullBlocks(root, Prompt(12), 4));
  EXPECT_EQ(m.pool().SnapshotHashes().size(), 3u);
  m.Release(&s);
  EXPECT_TRUE(m.pool().TakeEvents().empty());  // freeing keeps the cache
}

TEST(KvCacheManagerTest, HashesEachBlockOnceThroughRetriesAndPreemption) {
  KvCacheManager m(4, 4);
  const BlockHash root = RootHash("m");
  const auto prompt = Prompt(14);  // 3 full blocks
  SequenceBlocks seq;
  seq.root = root;
  for (int attempt = 0; attempt < 5; ++attempt) (void)m.FindCachedPrefix(&seq, prompt);
  EXPECT_EQ(m.stats().blocks_hashed, 3);
  ASSERT_TRUE(m.AllocateSlots(&seq, 14));
  m.CommitComputed(&seq, prompt, 14);
  EXPECT_EQ(m.stats().blocks_hashed, 3);
  m.Release(&seq);  // preempted: the hashes stay
  EXPECT_EQ(seq.hashes.size(), 3u);
  const CachedPrefix again = m.FindCachedPrefix(&seq, prompt);
  EXPECT_EQ(again.num_tokens(), 12);
  EXPECT_EQ(m.stats().blocks_hashed, 3);
  // Generated tokens that fill a block are hashed once, when committed.
  auto grown = prompt;
  grown.push_back(1);
  grown.push_back(2);
  ASSERT_TRUE(m.AllocateSlots(&seq, 16, &again));
  m.CommitComputed(&seq, grown, 16);
  m.CommitComputed(&seq, grown, 16);
  EXPECT_EQ(m.stats().blocks_hashed, 4);
  EXPECT_EQ(seq.hashes, HashFullBlocks(root, grown, 4));
}

}  // namespace
}  // namespace kvmesh

namespace kvmesh {
namespace {

// Window pages: a window of 9 positions in blocks of 4 spans 2 blocks
// before the next position ((9 - 1) / 4 rounded up).
TEST(KvCacheManagerWindowTest, PagesTheWindowHasPassedAreReleasedAndStayCached) {
  KvCacheManager m(16, 4);
  m.EnableWindowPages(6, 9);
  EXPECT_EQ(m.WindowSpan(), 2);
  const BlockHash root = RootHash("model");
  const auto prompt = Prompt(22);  // 5 full blocks and 2 tokens
  SequenceBlocks seq;
  seq.root = root;
  const CachedPrefix none = m.FindCachedPrefix(&seq, prompt);
  EXPECT_EQ(none.num_blocks(), 0);
  // Chunks of 8: blocks 0-1, then 2-3, then 4-5.
  for (int32_t done = 0; done < 22;) {
    const int32_t n = std::min(8, 22 - done);
    ASSERT_TRUE(m.AllocateSlots(&seq, done + n, done == 0 ? &none : nullptr)) << done;
    ASSERT_EQ(seq.window_table.size(), seq.table.size());
    done += n;
    m.CommitComputed(&seq, prompt, done);
    m.ReleaseOutsideWindow(&seq, done);
    // Position `done` attends to [done - 8, done]: blocks from (done - 8) / 4.
    const int32_t first_kept = std::max(0, done - 8) / 4;
    for (int32_t b = 0; b < static_cast<int32_t>(seq.window_table.size()); ++b) {
      EXPECT_EQ(seq.window_table[b] < 0, b < first_kept) << "block " << b << " after " << done;
    }
    EXPECT_LE(m.window_pool()->num_used(), m.WindowSpan() + 1);
  }
  EXPECT_EQ(seq.window_released, 3);  // 22 - 8 = 14: blocks 0-2 wholly before
  // The released pages stay cached: the pool has 6 pages, the sequence used 6.
  EXPECT_EQ(m.window_pool()->num_free_cached(), 3);
  m.Release(&seq);
  EXPECT_EQ(m.pool().num_free(), 16);
  EXPECT_EQ(m.window_pool()->num_free(), 6);
  EXPECT_TRUE(seq.window_table.empty());
}

TEST(KvCacheManagerWindowTest, APrefixEndsWhereItsWindowPagesAreCached) {
  KvCacheManager m(16, 4);
  m.EnableWindowPages(8, 9);
  const BlockHash root = RootHash("model");
  int32_t cached = -1;
  SequenceBlocks first = RunPrompt(m, root, Prompt(25), &cached);
  m.ReleaseOutsideWindow(&first, 25);  // blocks 0-3 lie before position 17
  m.Release(&first);
  // All 6 full blocks are cached, and window pages for blocks 0-5 too
  // (released ones stay cached until reused).
  CachedPrefix hit = Find(m, root, Prompt(30));
  EXPECT_EQ(hit.num_blocks(), 6);
  EXPECT_EQ(hit.window_first, 4);
  EXPECT_EQ(hit.window_blocks.size(), 2u);

  // Reuse 7 of the 8 window pages (a different prompt), evicting the least
  // recently released: blocks 0-3's, then 5's and 4's.
  SequenceBlocks other = RunPrompt(m, root, Prompt(27, 5000), &cached);
  EXPECT_EQ(cached, 0);
  // Block 5's page is gone, so the prefix cannot end after block 5: each
  // shorter end needs pages that are gone too, and nothing is a hit.
  hit = Find(m, root, Prompt(30));
  EXPECT_EQ(hit.num_blocks(), 0);
  m.Release(&other);
}

TEST(KvCacheManagerWindowTest, AHitTakesItsTailsWindowPagesAndReleasesNothingBefore) {
  KvCacheManager m(16, 4);
  m.EnableWindowPages(8, 9);
  const BlockHash root = RootHash("model");
  int32_t cached = -1;
  SequenceBlocks first = RunPrompt(m, root, Prompt(13), &cached);  // 3 full blocks
  m.Release(&first);
  SequenceBlocks second = RunPrompt(m, root, Prompt(20), &cached);
  EXPECT_EQ(cached, 12);
  ASSERT_EQ(second.window_table.size(), 5u);
  EXPECT_EQ(second.window_table[0], -1);  // before block 1: not taken
  EXPECT_GE(second.window_table[1], 0);
  EXPECT_EQ(second.window_released, 1);
  EXPECT_EQ(m.window_pool()->ref_count(second.window_table[1]), 1);
  // A fork cannot copy a block whose layers' pages have two ids: the child
  // computes its prompt instead.
  SequenceBlocks child;
  int32_t from = 0, to = 0;
  EXPECT_FALSE(m.Fork(second, 18, &child, &from, &to));
  m.Release(&second);
  EXPECT_EQ(m.window_pool()->num_free(), 8);
}

TEST(KvCacheManagerWindowTest, RunningOutOfWindowPagesFailsAndChangesNothing) {
  KvCacheManager m(16, 4);
  m.EnableWindowPages(3, 9);
  SequenceBlocks seq;
  seq.root = RootHash("model");
  EXPECT_FALSE(m.AllocateSlots(&seq, 13));  // 4 blocks, 3 window pages
  EXPECT_TRUE(seq.table.empty());
  EXPECT_EQ(m.pool().num_free(), 16);
  EXPECT_TRUE(m.AllocateSlots(&seq, 12));
  m.Release(&seq);
}

}  // namespace
}  // namespace kvmesh

namespace kvmesh {
namespace {

// A retained prefix (cache_control) keeps the window pages a hit at its end
// attends to, even when the sequence released them long before it ended:
// the rest of the window pool is then reused by other prompts, and the
// prefix still hits.
TEST(KvCacheManagerWindowTest, ARetainedPrefixKeepsItsWindowTail) {
  KvCacheManager m(32, 4);
  m.EnableWindowPages(8, 9);  // 2 pages before the next position
  const BlockHash root = RootHash("model");
  const auto prompt = Prompt(40);
  const std::vector<KvCacheManager::RetainedPrefix> retained = {{16, 60'000}};  // 4 blocks
  SequenceBlocks seq;
  seq.root = root;
  for (int32_t done = 0; done < 40; done += 4) {
    ASSERT_TRUE(m.AllocateSlots(&seq, done + 4));
    m.CommitComputed(&seq, prompt, done + 4);
    m.ReleaseOutsideWindow(&seq, done + 4, retained);
  }
  m.Retain(seq, 16, 60'000);
  m.Release(&seq);
  EXPECT_EQ(m.window_pool()->num_free_retained(), 2);  // blocks 2 and 3's pages
  // Other prompts take every window page but the retained ones.
  int32_t cached = -1;
  SequenceBlocks other = RunPrompt(m, root, Prompt(24, 5000), &cached);
  m.Release(&other);
  const CachedPrefix hit = Find(m, root, Prompt(17));
  EXPECT_EQ(hit.num_blocks(), 4);
  EXPECT_EQ(hit.window_first, 2);
  // Without the retention, the same traffic leaves no hit.
  KvCacheManager plain(32, 4);
  plain.EnableWindowPages(8, 9);
  SequenceBlocks again;
  again.root = root;
  for (int32_t done = 0; done < 40; done += 4) {
    ASSERT_TRUE(plain.AllocateSlots(&again, done + 4));
    plain.CommitComputed(&again, prompt, done + 4);
    plain.ReleaseOutsideWindow(&again, done + 4);
  }
  plain.Release(&again);
  SequenceBlocks other2 = RunPrompt(plain, root, Prompt(24, 5000), &cached);
  plain.Release(&other2);
  EXPECT_EQ(Find(plain, root, Prompt(17)).num_blocks(), 0);
}

}  // namespace
}  // namespace kvmesh
