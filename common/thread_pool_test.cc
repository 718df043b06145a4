#include "common/thread_pool.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <thread>
#include <vector>

#include "common/spin_wait.h"

namespace kvmesh {
namespace {

TEST(ThreadPoolTest, CoversEveryIndexExactlyOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    EXPECT_EQ(pool.num_threads(), threads);
    for (int64_t n : {1, 2, 7, 100, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      pool.ParallelFor(n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) hits[i]++;
      });
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
    }
  }
}

TEST(ThreadPoolTest, ChunkingIsDeterministic) {
  ThreadPool pool(4);
  std::vector<std::pair<int64_t, int64_t>> first(4), second(4);
  auto record = [&](std::vector<std::pair<int64_t, int64_t>>& out) {
    std::atomic<int> k{0};
    pool.ParallelFor(10, [&](int64_t b, int64_t e) { out[k++] = {b, e}; });
    std::sort(out.begin(), out.end());
  };
  record(first);
  record(second);
  EXPECT_EQ(first, second);
  EXPECT_EQ(first[0], (std::pair<int64_t, int64_t>(0, 2)));
  EXPECT_EQ(first[3], (std::pair<int64_t, int64_t>(7, 10)));
}

TEST(ThreadPoolTest, MinChunkLimitsSplitting) {
  ThreadPool pool(4);
  std::atomic<int> calls{0};
  pool.ParallelFor(
      10, [&](int64_t, int64_t) { calls++; }, 8);
  EXPECT_EQ(calls.load(), 1);
}

TEST(ThreadPoolTest, ManyRoundsDoNotDeadlock) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  for (int round = 0; round < 2000; ++round) {
    pool.ParallelFor(3, [&](int64_t b, int64_t e) { sum += e - b; });
  }
  EXPECT_EQ(sum.load(), 6000);
}

// Calls spaced wider than the spin window make the workers and the caller
// sleep and wake through the condition variables.
TEST(ThreadPoolTest, SleepingWorkersWakeForTheNextCall) {
  ThreadPool pool(3);
  for (int round = 0; round < 5; ++round) {
    std::atomic<int> calls{0};
    pool.ParallelFor(3, [&](int64_t, int64_t) {
      if (calls++ == 0) {
        std::this_thread::sleep_for(std::chrono::microseconds(3 * kSpinMicros));
      }
    });
    EXPECT_EQ(calls.load(), 3);
    std::this_thread::sleep_for(std::chrono::microseconds(3 * kSpinMicros));
  }
}

}  // namespace
}  // namespace kvmesh
