// What a routing decision reads of each candidate worker, made cheap to read
// at a thousand workers per decision and many decisions at once:
//   - LoadBoard holds the worker's last load report behind a seqlock: a read
//     takes no lock and writes nothing shared, so routing threads do not
//     contend with each other or with the poller.
//   - InternWorkerId gives each distinct worker id one immutable string for
//     the life of the process, so a decision refers to ids without copying
//     them. The table grows by one entry per id ever seen (a worker restart
//     keeps its id); a fleet that cycles through millions of pods spends
//     tens of bytes on each.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

#include "kvmesh/v1/worker.pb.h"

namespace kvmesh::router {

// The fields of a v1::LoadResponse that routing uses.
struct RoutingLoad {
  int32_t running = 0;
  int32_t waiting = 0;
  int64_t queued_prefill_tokens = 0;
  int64_t max_tokens_per_step = 0;  // 0: not reported (an older worker)
  double prefill_tokens_per_s = 0;
  int64_t kv_blocks_free = 0;
  int64_t kv_blocks_total = 0;
  int64_t kv_blocks_cached = 0;
  double host_restore_tokens_per_s = 0;
  double peer_fetch_tokens_per_s = 0;
  double kv_refill_ratio = 0;
};

class LoadBoard {
 public:
  // Any number of readers, any thread, no lock; never torn.
  RoutingLoad Read() const;
  // Writers are serialized among themselves.
  void Publish(const v1::LoadResponse& load);
  // Read() touches this many bytes from the start of the board.
  static constexpr size_t kReadBytes = 12 * sizeof(uint64_t);

 private:
  std::atomic<uint64_t> seq_{0};  // odd while a write is in progress
  std::atomic<int64_t> running_{0}, waiting_{0}, queued_prefill_tokens_{0}, max_tokens_per_step_{0};
  std::atomic<int64_t> kv_blocks_free_{0}, kv_blocks_total_{0}, kv_blocks_cached_{0};
  std::atomic<double> prefill_tokens_per_s_{0}, host_restore_tokens_per_s_{0},
      peer_fetch_tokens_per_s_{0}, kv_refill_ratio_{0};
  std::mutex write_mu_;  // last: readers never touch it
};

// The process-lifetime copy of `id`.
const std::string* InternWorkerId(std::string_view id);

}  // namespace kvmesh::router
