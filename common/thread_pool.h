// ThreadPool: a fixed set of persistent worker threads for data-parallel loops.
//
// ParallelFor(n, fn) splits [0, n) into contiguous chunks, runs fn(begin, end)
// on the workers and on the calling thread, and returns when all chunks are
// done. Threads are started once in the constructor (no per-call start cost)
// and joined in the destructor. ParallelFor is meant to be called from one
// thread at a time (the engine loop); concurrent callers are serialised.
//
// A forward pass hands work to the pool hundreds of times per token, often
// for only tens of microseconds each, so both sides wait by spinning briefly
// (about kSpinMicros) before they sleep on a condition variable: back-to-back
// calls then cost no system call, while an idle pool still sleeps. The split
// into chunks is fixed by n and the thread count; which thread runs a chunk
// is first come, first served, so a worker the OS has not scheduled yet
// does not hold a call up (on a busy machine the caller runs its share).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/status.h"

namespace kvmesh {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 means run everything inline.
  // At most 65535. With `cores`, every worker keeps to those cores (Linux
  // CPU affinity; the caller pins itself with PinCurrentThread).
  explicit ThreadPool(int num_threads, std::vector<int> cores = {});
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over chunks of [0, n). `min_chunk` bounds how finely
  // the range is split (work below it is not worth a thread hand-off).
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                   int64_t min_chunk = 1);

  // Restricts the calling thread to `cores` (no-op when empty). Fails with a
  // message naming the cores when the OS refuses (a core that does not exist
  // or is outside the process's cpuset).
  static Status PinCurrentThread(const std::vector<int>& cores);

 private:
  void WorkerLoop();
  // Claims and runs chunks of call number `call` until none are left.
  void RunChunks(uint32_t call);

  std::vector<std::thread> workers_;
  std::vector<int> cores_;
  std::mutex call_mu_;  // serialises ParallelFor callers

  // A call publishes fn_ and n_, sets claim_ to (call number, chunk count,
  // chunk 0) and bumps generation_ (release). Threads claim chunks by
  // incrementing claim_ while its call number is theirs, read fn_ and n_ only
  // once they hold a chunk, and count finished chunks down in remaining_.
  // Sleepers are woken through mu_ and the cvs.
  std::atomic<uint64_t> generation_{0};
  std::atomic<uint64_t> claim_{0};  // call << 32 | chunks << 16 | next chunk
  std::atomic<int> remaining_{0};   // chunks of the current call not finished
  std::atomic<bool> stop_{false};
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  int sleeping_workers_ = 0;      // guarded by mu_
  bool caller_sleeping_ = false;  // guarded by mu_
};

}  // namespace kvmesh
