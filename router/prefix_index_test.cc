#include "router/prefix_index.h"

#include <gtest/gtest.h>

#include <numeric>
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

}  // namespace
}  // namespace kvmesh::router
