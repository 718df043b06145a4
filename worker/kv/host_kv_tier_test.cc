#include "worker/kv/host_kv_tier.h"

#include <gtest/gtest.h>

#include <numeric>

#include "worker/kv/kv_cache_manager.h"

namespace kvmesh {
namespace {

constexpr int kBlockSize = 4;
constexpr size_t kBlockBytes = 8;

std::vector<int32_t> Prompt(int n, int first = 100) {
  std::vector<int32_t> t(n);
  std::iota(t.begin(), t.end(), first);
  return t;
}

// A device pool in plain memory: block b holds kBlockBytes bytes. Writes a
// block's bytes as a function of the tokens "computed" into it, so a restored
// block can be checked byte for byte.
class FakeDevice final : public KvBlockCopier {
 public:
  explicit FakeDevice(int32_t blocks) : bytes_(static_cast<size_t>(blocks) * kBlockBytes) {}
  Status ToHost(int32_t block, std::span<uint8_t> host) override {
    ++to_host;
    if (fail_to_host) return InternalError("injected");
    std::copy_n(bytes_.begin() + block * kBlockBytes, kBlockBytes, host.begin());
    return Status::Ok();
  }
  Status FromHost(std::span<const uint8_t> host, int32_t block) override {
    ++from_host;
    if (fail_from_host-- > 0) return InternalError("injected");
    std::copy(host.begin(), host.end(), bytes_.begin() + block * kBlockBytes);
    return Status::Ok();
  }
  // What computing `tokens` into `block` leaves there.
  void Compute(int32_t block, std::span<const int32_t> tokens) {
    for (size_t i = 0; i < kBlockBytes; ++i) {
      bytes_[block * kBlockBytes + i] = static_cast<uint8_t>(tokens[i % tokens.size()] * 7 + i);
    }
  }
  std::vector<uint8_t> Block(int32_t block) const {
    return {bytes_.begin() + block * kBlockBytes, bytes_.begin() + (block + 1) * kBlockBytes};
  }
  int to_host = 0;
  int from_host = 0;
  bool fail_to_host = false;
  int fail_from_host = 0;

 private:
  std::vector<uint8_t> bytes_;
};

// Runs `prompt` through admission and a full prefill; returns the sequence
// (still holding its blocks) and sets the cached tokens it started from.
SequenceBlocks Prefill(KvCacheManager& m, FakeDevice& dev, const std::vector<int32_t>& prompt,
                       int32_t* cached) {
  SequenceBlocks seq;
  seq.root = RootHash("m");
  const CachedPrefix prefix = m.FindCachedPrefix(&seq, prompt);
  EXPECT_TRUE(m.AllocateSlots(&seq, static_cast<int32_t>(prompt.size()), &prefix));
  *cached = seq.num_cached_blocks * kBlockSize;
  for (size_t i = seq.num_cached_blocks; i < seq.table.size(); ++i) {
    const size_t end = std::min(prompt.size(), (i + 1) * kBlockSize);
    dev.Compute(seq.table[i], std::span(prompt).subspan(i * kBlockSize, end - i * kBlockSize));
  }
  m.CommitComputed(&seq, prompt, static_cast<int32_t>(prompt.size()));
  m.EndStep();
  return seq;
}

// A device pool of 4 blocks and a host tier of 8 over a FakeDevice.
class HostKvTierManagerTest : public ::testing::Test {
 protected:
  HostKvTierManagerTest() { m.EnableHostTier(8 * kBlockBytes, kBlockBytes, &dev); }

  // Prefills `prompt` and releases it (its blocks stay cached); returns the
  // cached tokens it started from.
  int32_t PrefillAndRelease(const std::vector<int32_t>& prompt) {
    int32_t cached = -1;
    SequenceBlocks seq = Prefill(m, dev, prompt, &cached);
    m.Release(&seq);
    return cached;
  }

  FakeDevice dev{4};
  KvCacheManager m{4, kBlockSize};
};

TEST(HostKvTierTest, LeastRecentUnpinnedBlockMakesRoom) {
  HostKvTier tier(3 * kBlockBytes + 5, kBlockBytes, kBlockSize);
  ASSERT_EQ(tier.capacity(), 3);
  std::vector<BlockHash> h;
  for (int i = 0; i < 5; ++i) h.push_back(ChainBlockHash(RootHash("m"), Prompt(4, i * 10)));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(tier.Insert(h[i], std::nullopt, Prompt(4, i * 10)));
  const int32_t oldest = *tier.Find(h[0], Prompt(4, 0));
  tier.Pin(oldest);
  ASSERT_TRUE(tier.Insert(h[3], std::nullopt, Prompt(4, 30)));  // drops h[1], not pinned h[0]
  EXPECT_TRUE(tier.Find(h[0], Prompt(4, 0)));
  EXPECT_FALSE(tier.Find(h[1], Prompt(4, 10)));
  EXPECT_FALSE(tier.Find(h[0], Prompt(4, 1))) << "same hash, other tokens: a collision";
  // Inserting a hash already held only makes it the most recent.
  const auto again = tier.Insert(h[2], std::nullopt, Prompt(4, 20));
  ASSERT_TRUE(again);
  EXPECT_FALSE(again->needs_copy);
  // An erased slot is not reused before EndStep (a copy may still read it).
  tier.Unpin(oldest);
  tier.Erase(oldest);
  EXPECT_EQ(tier.size(), 2);
  ASSERT_TRUE(tier.Insert(h[4], std::nullopt, Prompt(4, 40)));  // drops h[3]
  EXPECT_NE(*tier.Find(h[4], Prompt(4, 40)), oldest);
  tier.EndStep();
  const auto events = tier.TakeEvents();
  ASSERT_FALSE(events.empty());
  for (const KvEvent& e : events) EXPECT_EQ(e.tier, CacheTier::kHost);
  EXPECT_EQ(events[0].kind, KvEvent::Kind::kStored);
}

TEST(HostKvTierTest, NoCapacityTakesNothing) {
  HostKvTier tier(kBlockBytes - 1, kBlockBytes, kBlockSize);
  EXPECT_EQ(tier.capacity(), 0);
  EXPECT_FALSE(tier.Insert(RootHash("x"), std::nullopt, Prompt(4)));
}

TEST_F(HostKvTierManagerTest, EvictedPrefixIsRestoredByteForByteNotRecomputed) {
  int32_t cached = -1;
  const auto a = Prompt(13);  // 3 full blocks + 1 token
  SequenceBlocks sa = Prefill(m, dev, a, &cached);
  EXPECT_EQ(cached, 0);
  std::vector<std::vector<uint8_t>> a_bytes;
  for (int i = 0; i < 3; ++i) a_bytes.push_back(dev.Block(sa.table[i]));
  m.Release(&sa);
  (void)m.TakeEvents();

  // Another prompt takes every device block: a's blocks spill to the host.
  SequenceBlocks sb = Prefill(m, dev, Prompt(16, 500), &cached);
  EXPECT_EQ(m.stats().spilled_blocks, 3);
  EXPECT_EQ(m.host_tier()->size(), 3);
  const auto events = m.TakeEvents();
  size_t host_stored = 0, device_removed = 0;
  for (const KvEvent& e : events) {
    if (e.kind == KvEvent::Kind::kStored && e.tier == CacheTier::kHost) {
      host_stored += e.hashes.size();
    }
    if (e.kind == KvEvent::Kind::kRemoved && e.tier == CacheTier::kDevice) {
      device_removed += e.hashes.size();
    }
  }
  EXPECT_EQ(host_stored, 3u);
  EXPECT_EQ(device_removed, 3u);
  m.Release(&sb);

  // a again: its 3 blocks come back from the host tier.
  SequenceBlocks again = Prefill(m, dev, a, &cached);
  EXPECT_EQ(cached, 12);
  EXPECT_EQ(m.stats().host_hit_blocks, 3);
  EXPECT_EQ(dev.from_host, 3);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(dev.Block(again.table[i]), a_bytes[i]) << "block " << i;
  // The tiers are exclusive: restored blocks left the host (b's spilled in).
  SequenceBlocks probe;
  probe.root = RootHash("m");
  const CachedPrefix now = m.FindCachedPrefix(&probe, a);
  EXPECT_EQ(now.blocks.size(), 3u);
  EXPECT_TRUE(now.host_slots.empty());
  EXPECT_EQ(m.SnapshotHashes(CacheTier::kHost).size(), static_cast<size_t>(m.host_tier()->size()));
  m.Release(&again);
}

TEST_F(HostKvTierManagerTest, FailedRestoreComputesTheRest) {
  const auto a = Prompt(13);
  PrefillAndRelease(a);
  PrefillAndRelease(Prompt(16, 500));  // spills a's blocks
  int32_t cached = -1;
  dev.fail_from_host = 1;  // the first restore fails
  SequenceBlocks again = Prefill(m, dev, a, &cached);
  EXPECT_EQ(cached, 0);
  EXPECT_EQ(m.stats().failed_copies, 1);
  EXPECT_EQ(again.num_cached_blocks, 3);  // computed and cached again
  m.Release(&again);
}

TEST_F(HostKvTierManagerTest, FailedSpillLosesOnlyThatBlock) {
  PrefillAndRelease(Prompt(13));
  int32_t cached = -1;
  dev.fail_to_host = true;
  SequenceBlocks sb = Prefill(m, dev, Prompt(16, 500), &cached);
  EXPECT_EQ(m.stats().failed_copies, 3);
  EXPECT_EQ(m.host_tier()->size(), 0);
  m.Release(&sb);
  EXPECT_EQ(Prefill(m, dev, Prompt(13), &cached).num_cached_blocks, 3);
  EXPECT_EQ(cached, 0);
}

TEST_F(HostKvTierManagerTest, ClearCacheEmptiesEveryTier) {
  PrefillAndRelease(Prompt(13));
  PrefillAndRelease(Prompt(16, 500));
  EXPECT_EQ(m.ClearCache(), 4 + 3);
  EXPECT_EQ(m.host_tier()->size(), 0);
  const auto events = m.TakeEvents();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().kind, KvEvent::Kind::kAllCleared);
}

}  // namespace
}  // namespace kvmesh
