#include "common/thread_pool.h"

#include <algorithm>
#include <chrono>
#include <string>

#include "common/spin_wait.h"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

namespace kvmesh {
ThreadPool::ThreadPool(int num_threads, std::vector<int> cores) : cores_(std::move(cores)) {
  const int extra = std::max(0, num_threads - 1);
  workers_.reserve(extra);
  for (int i = 0; i < extra; ++i) {
    workers_.emplace_back([this] {
      // Pinning was checked by the pool's owner on its own thread; a worker
      // that cannot pin still computes the same results.
      (void)PinCurrentThread(cores_);
      WorkerLoop();
    });
  }
}

Status ThreadPool::PinCurrentThread(const std::vector<int>& cores) {
  if (cores.empty()) return Status::Ok();
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int c : cores) {
    if (c < 0 || c >= CPU_SETSIZE) {
      return InvalidArgumentError("core " + std::to_string(c) + " is outside 0.." +
                                  std::to_string(CPU_SETSIZE - 1));
    }
    CPU_SET(c, &set);
  }
  if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0) {
    std::string list;
    for (int c : cores) list += (list.empty() ? "" : ",") + std::to_string(c);
    return InvalidArgumentError("cannot pin a thread to cores " + list +
                                ": not all of them exist or are allowed to this process");
  }
  return Status::Ok();
#else
  return UnimplementedError("pinning threads to cores needs Linux");
#endif
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_.store(true);
  }
  work_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::RunChunks(uint32_t call) {
  // Chunk c is always [n * c / chunks, n * (c + 1) / chunks): the split, and
  // with it every floating-point result, depends only on n and the thread
  // count. Which thread runs a chunk does not matter, so chunks are claimed
  // first come, first served: a worker the OS has not scheduled yet never
  // holds up a call - the others take its share.
  for (;;) {
    uint64_t claim = claim_.load(std::memory_order_acquire);
    if (static_cast<uint32_t>(claim >> 32) != call) return;  // a later call
    const int64_t chunks = static_cast<int64_t>((claim >> 16) & 0xFFFF);
    const int64_t chunk = static_cast<int64_t>(claim & 0xFFFF);
    if (chunk >= chunks) return;
    if (!claim_.compare_exchange_weak(claim, claim + 1, std::memory_order_acq_rel)) continue;
    // The call cannot finish before this chunk does: fn_ and n_ stay valid.
    const int64_t begin = n_ * chunk / chunks;
    const int64_t end = n_ * (chunk + 1) / chunks;
    if (begin < end) (*fn_)(begin, end);
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      std::lock_guard<std::mutex> lock(mu_);
      if (caller_sleeping_) done_cv_.notify_one();
    }
  }
}

void ThreadPool::ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                             int64_t min_chunk) {
  if (n <= 0) return;
  const int64_t max_chunks = std::max<int64_t>(1, n / std::max<int64_t>(1, min_chunk));
  const int chunks = static_cast<int>(std::min<int64_t>(num_threads(), max_chunks));
  if (chunks <= 1) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> call_lock(call_mu_);
  fn_ = &fn;
  n_ = n;
  remaining_.store(chunks, std::memory_order_relaxed);
  const uint32_t call = static_cast<uint32_t>(generation_.load(std::memory_order_relaxed)) + 1;
  claim_.store(static_cast<uint64_t>(call) << 32 | static_cast<uint64_t>(chunks) << 16,
               std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_release);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sleeping_workers_ > 0) work_cv_.notify_all();
  }
  RunChunks(call);
  auto all_done = [this] { return remaining_.load(std::memory_order_acquire) == 0; };
  if (!SpinUntil(all_done)) {
    std::unique_lock<std::mutex> lock(mu_);
    caller_sleeping_ = true;
    done_cv_.wait(lock, all_done);
    caller_sleeping_ = false;
  }
}

void ThreadPool::WorkerLoop() {
  uint64_t seen = 0;
  for (;;) {
    auto has_work = [&] {
      return stop_.load(std::memory_order_relaxed) ||
             generation_.load(std::memory_order_acquire) != seen;
    };
    if (!SpinUntil(has_work)) {
      std::unique_lock<std::mutex> lock(mu_);
      ++sleeping_workers_;
      work_cv_.wait(lock, has_work);
      --sleeping_workers_;
    }
    if (stop_.load()) return;
    seen = generation_.load(std::memory_order_acquire);
    RunChunks(static_cast<uint32_t>(seen));
  }
}

}  // namespace kvmesh
