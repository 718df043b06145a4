#include "router/worker_load.h"

#include <absl/container/node_hash_set.h>

#include <algorithm>

namespace kvmesh::router {

RoutingLoad LoadBoard::Read() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  RoutingLoad load;
  for (;;) {
    const uint64_t before = seq_.load(std::memory_order_acquire);
    if (before & 1) continue;  // a write is in progress
    load.running = static_cast<int32_t>(running_.load(kRelaxed));
    load.waiting = static_cast<int32_t>(waiting_.load(kRelaxed));
    load.queued_prefill_tokens = queued_prefill_tokens_.load(kRelaxed);
    load.max_tokens_per_step = max_tokens_per_step_.load(kRelaxed);
    load.prefill_tokens_per_s = prefill_tokens_per_s_.load(kRelaxed);
    load.kv_blocks_free = kv_blocks_free_.load(kRelaxed);
    load.kv_blocks_total = kv_blocks_total_.load(kRelaxed);
    load.kv_blocks_cached = kv_blocks_cached_.load(kRelaxed);
    load.host_restore_tokens_per_s = host_restore_tokens_per_s_.load(kRelaxed);
    load.peer_fetch_tokens_per_s = peer_fetch_tokens_per_s_.load(kRelaxed);
    load.kv_refill_ratio = kv_refill_ratio_.load(kRelaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (seq_.load(std::memory_order_relaxed) == before) return load;
  }
}

void LoadBoard::Publish(const v1::LoadResponse& load) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  std::lock_guard<std::mutex> lock(write_mu_);
  const uint64_t seq = seq_.load(kRelaxed);
  seq_.store(seq + 1, kRelaxed);
  std::atomic_thread_fence(std::memory_order_release);
  running_.store(load.running(), kRelaxed);
  waiting_.store(load.waiting(), kRelaxed);
  queued_prefill_tokens_.store(static_cast<int64_t>(load.queued_prefill_tokens()), kRelaxed);
  max_tokens_per_step_.store(load.max_tokens_per_step(), kRelaxed);
  prefill_tokens_per_s_.store(load.prefill_tokens_per_s(), kRelaxed);
  kv_blocks_free_.store(static_cast<int64_t>(load.kv_blocks_free()), kRelaxed);
  kv_blocks_total_.store(static_cast<int64_t>(load.kv_blocks_total()), kRelaxed);
  kv_blocks_cached_.store(static_cast<int64_t>(load.kv_blocks_cached()), kRelaxed);
  host_restore_tokens_per_s_.store(load.host_restore_tokens_per_s(), kRelaxed);
  peer_fetch_tokens_per_s_.store(load.peer_fetch_tokens_per_s(), kRelaxed);
  // Out of 0..1 (a faulty worker): the nearest bound; not a number: 0.
  const double refill = load.kv_refill_ratio();
  kv_refill_ratio_.store(refill > 0 ? std::min(refill, 1.0) : 0.0, kRelaxed);
  seq_.store(seq + 2, std::memory_order_release);
}

const std::string* InternWorkerId(std::string_view id) {
  static std::mutex mu;
  static auto* ids = new absl::node_hash_set<std::string>();  // never freed: see the header
  std::lock_guard<std::mutex> lock(mu);
  return &*ids->emplace(id).first;
}

}  // namespace kvmesh::router
