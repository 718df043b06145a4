#include "router/prefix_index.h"

#include <gtest/gtest.h>

#include <map>
#include <numeric>
#include <random>
#include <string>
#include <thread>

namespace kvmesh::router {
namespace {

std::vector<BlockHash> Chain(int n, int first = 0) {
  std::vector<int32_t> tokens(n * 4);
  std::iota(tokens.begin(), tokens.end(), first);
  return HashFullBlocks(RootHash("m"), tokens, 4);
}

WorkerSet Slots(std::initializer_list<int> s) {
  WorkerSet w;
  for (int i : s) w.Add(i);
  return w;
}

TEST(PrefixIndexTest, LeadingBlocksPerWorker) {
  PrefixIndex index;
  const auto h = Chain(5);
  index.AddExact(0, std::span(h).subspan(0, 5));
  index.AddExact(1, std::span(h).subspan(0, 2));
  index.AddExact(2, std::span(h).subspan(1, 4));  // holds later blocks but not the first
  const PrefixMatch m = index.Match(h, Slots({0, 1, 2, 3}));
  EXPECT_EQ(m.blocks[0], 5);
  EXPECT_EQ(m.blocks[1], 2);
  EXPECT_EQ(m.blocks[2], 0);
  EXPECT_EQ(m.blocks[3], 0);
  // Only candidates are considered.
  EXPECT_EQ(index.Match(h, Slots({1})).blocks[0], 0);
}

TEST(PrefixIndexTest, HostTierBlocksMatchAndAreCountedApart) {
  PrefixIndex index;
  const auto h = Chain(5);
  // Worker 0: blocks 0-1 on its device, 2-4 spilled to its host tier.
  index.AddExact(0, h);
  index.RemoveExact(0, std::span(h).subspan(2, 3));
  index.AddExact(0, std::span(h).subspan(2, 3), IndexTier::kHost);
  index.AddExact(1, std::span(h).subspan(0, 3));
  PrefixMatch m = index.Match(h, Slots({0, 1}));
  EXPECT_EQ(m.blocks[0], 5);
  EXPECT_EQ(m.exact_blocks[0], 5);
  EXPECT_EQ(m.host_blocks[0], 3);
  EXPECT_EQ(m.blocks[1], 3);
  EXPECT_EQ(m.host_blocks[1], 0);
  EXPECT_EQ(index.exact_count(0), 5u);
  // Restored: the host entry goes, the device one comes back.
  index.RemoveExact(0, std::span(h).subspan(2, 1), IndexTier::kHost);
  index.AddExact(0, std::span(h).subspan(2, 1));
  m = index.Match(h, Slots({0}));
  EXPECT_EQ(m.blocks[0], 5);
  EXPECT_EQ(m.host_blocks[0], 2);
  // Dropped from the host tier too: gone.
  index.RemoveExact(0, std::span(h).subspan(3, 2), IndexTier::kHost);
  EXPECT_EQ(index.Match(h, Slots({0})).blocks[0], 3);
  EXPECT_EQ(index.exact_count(0), 3u);
  index.RemoveWorker(0);
  EXPECT_EQ(index.exact_count(0), 0u);
  // Device, host, device: the worker reuses only the first two (it restores
  // host blocks after its device ones), so the match stops there.
  index.AddExact(2, std::span(h).subspan(0, 1));
  index.AddExact(2, std::span(h).subspan(1, 1), IndexTier::kHost);
  index.AddExact(2, std::span(h).subspan(2, 3));
  m = index.Match(h, Slots({2}));
  EXPECT_EQ(m.blocks[2], 2);
  EXPECT_EQ(m.host_blocks[2], 1);
}

TEST(PrefixIndexTest, RemovalsAndWorkerLoss) {
  PrefixIndex index;
  const auto h = Chain(3);
  index.AddExact(0, h);
  index.AddExact(1, h);
  index.RemoveExact(0, std::span(h).subspan(1, 1));
  EXPECT_EQ(index.Match(h, Slots({0, 1})).blocks[0], 1);
  index.RemoveWorker(1);
  EXPECT_EQ(index.Match(h, Slots({0, 1})).blocks[1], 0);
  EXPECT_EQ(index.exact_count(1), 0u);
  index.RemoveWorker(0);
  EXPECT_EQ(index.size(), 0u);
}

// A clock the test steps by hand.
struct FakeClock {
  PrefixIndex::Clock::time_point t{std::chrono::hours(1)};
  PrefixIndex::Now now() {
    return [this] { return t; };
  }
};

TEST(PrefixIndexTest, OptimisticEntriesCountUntilTheyExpire) {
  FakeClock clock;
  PrefixIndex index(std::chrono::milliseconds(50), clock.now());
  const auto h = Chain(4);
  index.AddOptimistic(3, h);
  PrefixMatch m = index.Match(h, Slots({3}));
  EXPECT_EQ(m.blocks[3], 4);
  EXPECT_EQ(m.exact_blocks[3], 0);
  clock.t += std::chrono::milliseconds(49);
  EXPECT_EQ(index.Match(h, Slots({3})).blocks[3], 4);
  clock.t += std::chrono::milliseconds(1);
  EXPECT_EQ(index.Match(h, Slots({3})).blocks[3], 0);
  // Confirmed by an event: no longer expires.
  index.AddOptimistic(3, h);
  index.AddExact(3, std::span(h).subspan(0, 2));
  clock.t += std::chrono::seconds(80);
  m = index.Match(h, Slots({3}));
  EXPECT_EQ(m.blocks[3], 2);
  EXPECT_EQ(m.exact_blocks[3], 2);
}

// Each worker's guess expires on its own: routing the same prefix to a
// second worker later does not extend the first one's.
TEST(PrefixIndexTest, OptimisticEntriesExpirePerWorker) {
  FakeClock clock;
  PrefixIndex index(std::chrono::seconds(20), clock.now());
  const auto h = Chain(3);
  index.AddOptimistic(1, h);
  clock.t += std::chrono::seconds(15);
  index.AddOptimistic(2, h);
  clock.t += std::chrono::seconds(10);  // 25 s after the first, 10 after the second
  const PrefixMatch m = index.Match(h, Slots({1, 2}));
  EXPECT_EQ(m.blocks[1], 0);
  EXPECT_EQ(m.blocks[2], 3);
  // Routed to worker 1 again: its guess is renewed, not duplicated.
  index.AddOptimistic(1, h);
  clock.t += std::chrono::seconds(19);
  EXPECT_EQ(index.Match(h, Slots({1, 2})).blocks[1], 3);
  EXPECT_EQ(index.Match(h, Slots({1, 2})).blocks[2], 0);
}

// Hashes routed but never confirmed leave the index once their guesses have
// expired: on an explicit sweep, and on their own as routing goes on.
TEST(PrefixIndexTest, ExpiredGuessesAreSwept) {
  FakeClock clock;
  PrefixIndex index(std::chrono::seconds(20), clock.now());
  const auto confirmed = Chain(2);
  index.AddExact(0, confirmed);
  index.AddOptimistic(1, confirmed);  // a guess on a hash another worker holds
  const auto guessed = Chain(5, 77);
  index.AddOptimistic(2, guessed);
  EXPECT_EQ(index.size(), 7u);
  EXPECT_EQ(index.SweepExpired(), 0u);  // nothing expired yet
  clock.t += std::chrono::seconds(21);
  EXPECT_EQ(index.SweepExpired(), 5u);  // the unconfirmed hashes; worker 0's stay
  EXPECT_EQ(index.size(), 2u);
  EXPECT_EQ(index.Match(confirmed, Slots({0, 1})).blocks[0], 2);
  EXPECT_EQ(index.Match(confirmed, Slots({0, 1})).blocks[1], 0);
  // Without explicit sweeps: many routed prompts, each expired before the
  // next, keep the index bounded by what the sweep has not reached yet.
  for (int i = 0; i < 64 * 256; ++i) {
    index.AddOptimistic(i % 4, Chain(1, 1000 + i));
    clock.t += std::chrono::seconds(30);
  }
  EXPECT_LT(index.size(), 64u * 256u / 4u);
  clock.t += std::chrono::seconds(30);
  index.SweepExpired();
  EXPECT_EQ(index.size(), 2u);
}

TEST(PrefixIndexTest, ManyWorkersBeyondSixtyFour) {
  PrefixIndex index;
  const auto h = Chain(2);
  index.AddExact(100, h);
  index.AddExact(127, std::span(h).subspan(0, 1));
  const PrefixMatch m = index.Match(h, Slots({5, 100, 127}));
  EXPECT_EQ(m.blocks[100], 2);
  EXPECT_EQ(m.blocks[127], 1);
  EXPECT_EQ(m.blocks[5], 0);
}

TEST(PrefixIndexTest, AThousandWorkersShareAPrefix) {
  // A system prompt on every worker (its blocks hold a thousand workers
  // each), and sessions after it on a few.
  PrefixIndex index;
  const auto h = Chain(40);
  WorkerSet all;
  for (int w = 0; w < kMaxWorkersPerModel; ++w) {
    all.Add(w);
    if (w < 1000) index.AddExact(w, std::span(h).subspan(0, 3));
  }
  index.AddExact(kMaxWorkersPerModel - 1, h);                          // the whole chain
  index.AddExact(512, std::span(h).subspan(0, 20));                    // 20 on its device …
  index.AddExact(512, std::span(h).subspan(20, 5), IndexTier::kHost);  // … 5 in its host tier
  index.AddOptimistic(7, std::span(h).subspan(0, 10));                 // routed, not confirmed
  const PrefixMatch m = index.Match(h, all);
  EXPECT_EQ(m.blocks[0], 3);
  EXPECT_EQ(m.blocks[999], 3);
  EXPECT_EQ(m.blocks[1000], 0);
  EXPECT_EQ(m.blocks[kMaxWorkersPerModel - 1], 40);
  EXPECT_EQ(m.blocks[512], 25);
  EXPECT_EQ(m.host_blocks[512], 5);
  EXPECT_EQ(m.exact_blocks[512], 25);
  EXPECT_EQ(m.blocks[7], 10);
  EXPECT_EQ(m.exact_blocks[7], 3);
  EXPECT_EQ(index.exact_count(0), 3u);
  EXPECT_EQ(index.exact_count(512), 25u);
  // The shared blocks lose their holders one by one.
  for (int w = 0; w < 1000; ++w) index.RemoveWorker(w);
  const PrefixMatch after = index.Match(h, all);
  EXPECT_EQ(after.blocks[0], 0);
  EXPECT_EQ(after.blocks[kMaxWorkersPerModel - 1], 40);
  EXPECT_EQ(index.size(), 40u);
}

TEST(PrefixIndexTest, ABatchLargerThanTheInlineBuffer) {
  PrefixIndex index;
  const auto h = Chain(1000);
  index.AddExact(3, h);
  EXPECT_EQ(index.Match(h, Slots({3})).blocks[3], 1000);
  EXPECT_EQ(index.exact_count(3), 1000u);
  index.RemoveExact(3, std::span(h).subspan(500));
  EXPECT_EQ(index.Match(h, Slots({3})).blocks[3], 500);
  EXPECT_EQ(index.size(), 500u);
}

// The index against a model of it kept the plainest way: per worker, per
// block, its tiers and its guess's deadline; Match as first written, on
// WorkerSets. Random updates by 20 workers (more than a block keeps in its
// short list, so blocks go back and forth between the list and the
// bitmasks) over a 12-block chain, with the clock stepping.
class ModelIndex {
 public:
  struct Hold {
    bool device = false, host = false;
    int64_t guess_until_ms = -1;  // -1: no guess
  };
  void AddExact(int slot, std::span<const BlockHash> hs, IndexTier tier) {
    for (const BlockHash& h : hs) {
      Hold& hold = holds_[Key(h)][slot];
      (tier == IndexTier::kHost ? hold.host : hold.device) = true;
      hold.guess_until_ms = -1;
    }
  }
  void RemoveExact(int slot, std::span<const BlockHash> hs, IndexTier tier) {
    for (const BlockHash& h : hs) {
      auto it = holds_.find(Key(h));
      if (it == holds_.end() || !it->second.count(slot)) continue;
      Hold& hold = it->second[slot];
      (tier == IndexTier::kHost ? hold.host : hold.device) = false;
      hold.guess_until_ms = -1;
    }
  }
  void AddOptimistic(int slot, std::span<const BlockHash> hs, int64_t now_ms, int64_t ttl_ms) {
    for (const BlockHash& h : hs) {
      Hold& hold = holds_[Key(h)][slot];
      if (!hold.device) hold.guess_until_ms = now_ms + ttl_ms;
    }
  }
  void RemoveWorker(int slot) {
    for (auto& [key, holders] : holds_) holders.erase(slot);
  }
  size_t exact_count(int slot) const {
    size_t n = 0;
    for (const auto& [key, holders] : holds_) {
      auto it = holders.find(slot);
      n += it != holders.end() && (it->second.device || it->second.host);
    }
    return n;
  }
  PrefixMatch Match(std::span<const BlockHash> hashes, const WorkerSet& candidates,
                    int64_t now_ms) const {
    PrefixMatch m;
    WorkerSet alive = candidates, exact_alive = candidates, host_seen;
    std::array<int32_t, kMaxWorkersPerModel> host_run{};
    for (size_t i = 0; i < hashes.size() && !alive.empty(); ++i) {
      WorkerSet device, host, guessed;
      if (auto it = holds_.find(Key(hashes[i])); it != holds_.end()) {
        for (const auto& [slot, hold] : it->second) {
          if (hold.device) device.Add(slot);
          if (hold.host) host.Add(slot);
          if (hold.guess_until_ms > now_ms) guessed.Add(slot);
        }
      }
      const WorkerSet exact = device | host;
      const WorkerSet host_only = host - (device | guessed);
      alive = (alive & (exact | guessed)) - (host_seen - host_only);
      exact_alive = exact_alive & exact;
      host_seen = host_seen | (alive & host_only);
      alive.ForEach([&](int slot) {
        m.blocks[slot] = static_cast<int32_t>(i + 1);
        if (host_only.Contains(slot)) ++host_run[slot];
        m.host_blocks[slot] = host_run[slot];
      });
      exact_alive.ForEach([&](int slot) { m.exact_blocks[slot] = static_cast<int32_t>(i + 1); });
    }
    return m;
  }

 private:
  static std::string Key(const BlockHash& h) { return std::string(h.AsBytes()); }
  std::map<std::string, std::map<int, Hold>> holds_;
};

TEST(PrefixIndexTest, AgreesWithAPlainModelUnderRandomUpdates) {
  FakeClock clock;
  constexpr int64_t kTtlMs = 50;
  PrefixIndex index(std::chrono::milliseconds(kTtlMs), clock.now());
  ModelIndex model;
  const auto chain = Chain(12);
  std::vector<int> slots;
  WorkerSet candidates;
  for (int i = 0; i < 20; ++i) {
    slots.push_back(i < 19 ? i * 53 : kMaxWorkersPerModel - 1);  // across the words
    candidates.Add(slots.back());
  }
  std::mt19937 rng(7);
  int64_t now_ms = 0;
  for (int step = 0; step < 4000; ++step) {
    const int slot = slots[rng() % slots.size()];
    const size_t first = rng() % 3 == 0 ? rng() % chain.size() : 0;
    const size_t count = 1 + rng() % (chain.size() - first);
    const std::span<const BlockHash> part = std::span(chain).subspan(first, count);
    const IndexTier tier = rng() % 4 == 0 ? IndexTier::kHost : IndexTier::kDevice;
    switch (rng() % 10) {
      case 0:
      case 1:
      case 2:
      case 3:
        index.AddExact(slot, part, tier);
        model.AddExact(slot, part, tier);
        break;
      case 4:
      case 5:
        index.RemoveExact(slot, part, tier);
        model.RemoveExact(slot, part, tier);
        break;
      case 6:
      case 7:
        index.AddOptimistic(slot, part);
        model.AddOptimistic(slot, part, now_ms, kTtlMs);
        break;
      case 8:
        if (rng() % 8 == 0) {
          index.RemoveWorker(slot);
          model.RemoveWorker(slot);
        } else {
          index.SweepExpired();
        }
        break;
      default: {
        const int64_t ms = rng() % 30;
        clock.t += std::chrono::milliseconds(ms);
        now_ms += ms;
      }
    }
    const PrefixMatch got = index.Match(chain, candidates);
    const PrefixMatch want = model.Match(chain, candidates, now_ms);
    for (int s : slots) {
      ASSERT_EQ(got.blocks[s], want.blocks[s]) << "step " << step << " slot " << s;
      ASSERT_EQ(got.exact_blocks[s], want.exact_blocks[s]) << "step " << step << " slot " << s;
      ASSERT_EQ(got.host_blocks[s], want.host_blocks[s]) << "step " << step << " slot " << s;
      ASSERT_EQ(index.exact_count(s), model.exact_count(s)) << "step " << step << " slot " << s;
    }
  }
}

TEST(PrefixIndexTest, AHugeTtlIsCappedAndGuessesStillExpire) {
  FakeClock clock;
  PrefixIndex index(std::chrono::hours(24 * 365), clock.now());
  const auto h = Chain(2);
  index.AddOptimistic(1, h);
  EXPECT_EQ(index.Match(h, Slots({1})).blocks[1], 2);
  clock.t += std::chrono::hours(24 * 23);
  EXPECT_EQ(index.Match(h, Slots({1})).blocks[1], 2);
  clock.t += std::chrono::hours(24 * 2);  // past the 24-day cap
  EXPECT_EQ(index.Match(h, Slots({1})).blocks[1], 0);
}

}  // namespace
}  // namespace kvmesh::router
