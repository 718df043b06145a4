#include "router/worker_load.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <thread>
#include <vector>

namespace kvmesh::router {
namespace {

v1::LoadResponse Report(uint32_t k) {
  v1::LoadResponse load;
  load.set_running(k);
  load.set_waiting(k);
  load.set_queued_prefill_tokens(k);
  load.set_max_tokens_per_step(k);
  load.set_prefill_tokens_per_s(k);
  load.set_kv_blocks_free(k);
  load.set_kv_blocks_total(k);
  load.set_kv_blocks_cached(k);
  load.set_host_restore_tokens_per_s(k);
  load.set_peer_fetch_tokens_per_s(k);
  load.set_kv_refill_ratio(k / (k + 1.0));
  return load;
}

TEST(LoadBoardTest, ReadsWhatWasPublished) {
  LoadBoard board;
  EXPECT_EQ(board.Read().running, 0);
  v1::LoadResponse load;
  load.set_running(3);
  load.set_waiting(2);
  load.set_queued_prefill_tokens(4096);
  load.set_max_tokens_per_step(768);
  load.set_prefill_tokens_per_s(12000.5);
  load.set_kv_blocks_free(10);
  load.set_kv_blocks_total(64);
  load.set_kv_blocks_cached(7);
  load.set_host_restore_tokens_per_s(3e5);
  load.set_peer_fetch_tokens_per_s(8e4);
  load.set_kv_refill_ratio(0.375);
  board.Publish(load);
  const RoutingLoad r = board.Read();
  EXPECT_EQ(r.running, 3);
  EXPECT_EQ(r.waiting, 2);
  EXPECT_EQ(r.queued_prefill_tokens, 4096);
  EXPECT_EQ(r.max_tokens_per_step, 768);
  EXPECT_EQ(r.prefill_tokens_per_s, 12000.5);
  EXPECT_EQ(r.kv_blocks_free, 10);
  EXPECT_EQ(r.kv_blocks_total, 64);
  EXPECT_EQ(r.kv_blocks_cached, 7);
  EXPECT_EQ(r.host_restore_tokens_per_s, 3e5);
  EXPECT_EQ(r.peer_fetch_tokens_per_s, 8e4);
  EXPECT_EQ(r.kv_refill_ratio, 0.375);
  // A ratio out of 0..1 (a faulty worker) is read at the nearest bound.
  load.set_kv_refill_ratio(7);
  board.Publish(load);
  EXPECT_EQ(board.Read().kv_refill_ratio, 1.0);
  load.set_kv_refill_ratio(-1);
  board.Publish(load);
  EXPECT_EQ(board.Read().kv_refill_ratio, 0.0);
  load.set_kv_refill_ratio(std::nan(""));
  board.Publish(load);
  EXPECT_EQ(board.Read().kv_refill_ratio, 0.0);
}

TEST(LoadBoardTest, ReadersNeverSeeHalfAReport) {
  // Every report sets all fields to one number; a torn read would mix two.
  LoadBoard board;
  std::atomic<bool> done{false};
  std::atomic<int64_t> reads{0}, torn{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 2; ++t) {
    readers.emplace_back([&] {
      while (!done.load()) {
        const RoutingLoad r = board.Read();
        const int64_t k = r.running;
        if (r.waiting != k || r.queued_prefill_tokens != k || r.max_tokens_per_step != k ||
            r.prefill_tokens_per_s != k || r.kv_blocks_free != k || r.kv_blocks_total != k ||
            r.kv_blocks_cached != k || r.host_restore_tokens_per_s != k ||
            r.peer_fetch_tokens_per_s != k || r.kv_refill_ratio != k / (k + 1.0)) {
          ++torn;
        }
        ++reads;
      }
    });
  }
  // Publish until the readers have overlapped many reports (however the
  // machine schedules the threads), and at least 200,000 times.
  uint32_t k = 0;
  while (++k <= 200000 || reads.load() < 10000) board.Publish(Report(k));
  done = true;
  for (std::thread& t : readers) t.join();
  EXPECT_GE(reads.load(), 10000);
  EXPECT_EQ(torn.load(), 0);
  EXPECT_EQ(board.Read().running, static_cast<int32_t>(k - 1));
}

TEST(InternWorkerIdTest, OneStablePointerPerId) {
  const std::string* a = InternWorkerId("worker-a");
  const std::string* b = InternWorkerId("worker-b");
  EXPECT_NE(a, b);
  EXPECT_EQ(*a, "worker-a");
  for (int i = 0; i < 10000; ++i) InternWorkerId("filler-" + std::to_string(i));  // rehashes
  EXPECT_EQ(InternWorkerId("worker-a"), a);
  EXPECT_EQ(*a, "worker-a");
}

}  // namespace
}  // namespace kvmesh::router
