#include "worker/runtime/cpu/local_communicator.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace kvmesh {
namespace {

// Runs fn(rank, comm) on one thread per rank.
template <typename Fn>
void OnRanks(std::vector<std::unique_ptr<Communicator>>& comms, const Fn& fn) {
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] { fn(static_cast<int>(r), *comms[r]); });
  }
  for (std::thread& t : threads) t.join();
}

TEST(LocalCommunicatorTest, AllReduceSumsInRankOrderOnEveryRank) {
  constexpr int kRanks = 3;
  constexpr int kN = 1001;  // not a multiple of the ranks
  auto comms = LocalCommunicator::Create(kRanks);
  ASSERT_EQ(comms.size(), 3u);
  std::vector<std::vector<float>> data(kRanks, std::vector<float>(kN));
  for (int r = 0; r < kRanks; ++r) {
    for (int i = 0; i < kN; ++i)
      data[r][i] = (r == 0 ? 1e8f : 1.0f) * static_cast<float>(i % 7 + r);
  }
  std::vector<float> want(kN);
  for (int i = 0; i < kN; ++i) want[i] = (data[0][i] + data[1][i]) + data[2][i];
  // Many rounds: the barriers must not let a rank overtake another.
  for (int round = 0; round < 200; ++round) {
    auto copy = data;
    OnRanks(comms, [&](int r, Communicator& c) {
      EXPECT_EQ(c.rank(), r);
      EXPECT_EQ(c.size(), kRanks);
      EXPECT_TRUE(c.AllReduceSum(copy[r].data(), kN).ok());
    });
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(std::memcmp(copy[r].data(), want.data(), kN * sizeof(float)), 0)
          << "rank " << r << " round " << round;
    }
  }
}

TEST(LocalCommunicatorTest, BroadcastCopiesTheRoot) {
  auto comms = LocalCommunicator::Create(4);
  std::vector<std::vector<float>> data(4, std::vector<float>(10));
  for (int r = 0; r < 4; ++r) data[r].assign(10, static_cast<float>(r));
  OnRanks(comms, [&](int r, Communicator& c) {
    EXPECT_TRUE(c.Broadcast(data[r].data(), 10, 2).ok());
    EXPECT_TRUE(c.Barrier().ok());
  });
  for (int r = 0; r < 4; ++r) EXPECT_EQ(data[r], std::vector<float>(10, 2.0f)) << r;
}

TEST(LocalCommunicatorTest, MismatchedSizesAreAnErrorOnEveryRank) {
  auto comms = LocalCommunicator::Create(2);
  std::vector<float> a(8), b(6);
  Status sa, sb;
  OnRanks(comms, [&](int r, Communicator& c) {
    (r == 0 ? sa : sb) = r == 0 ? c.AllReduceSum(a.data(), 8) : c.AllReduceSum(b.data(), 6);
  });
  EXPECT_FALSE(sa.ok());
  EXPECT_FALSE(sb.ok());
  EXPECT_NE(sa.message().find("collective sizes differ"), std::string::npos) << sa.ToString();
}

TEST(LocalCommunicatorTest, BadRootIsRefused) {
  auto comms = LocalCommunicator::Create(1);
  float x = 0;
  EXPECT_FALSE(comms[0]->Broadcast(&x, 1, 1).ok());
  EXPECT_TRUE(comms[0]->AllReduceSum(&x, 1).ok());
}

}  // namespace
}  // namespace kvmesh
