// ThreadPool: a fixed set of persistent worker threads for data-parallel loops.
//
// ParallelFor(n, fn) splits [0, n) into contiguous chunks, runs fn(begin, end)
// on the workers and on the calling thread, and returns when all chunks are
// done. Threads are started once in the constructor (no per-call start cost)
// and joined in the destructor. ParallelFor is meant to be called from one
// thread at a time (the engine loop); concurrent callers are serialised.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kvmesh {

class ThreadPool {
 public:
  // `num_threads` counts the calling thread: 1 means run everything inline.
  explicit ThreadPool(int num_threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int num_threads() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(begin, end) over chunks of [0, n). `min_chunk` bounds how finely
  // the range is split (work below it is not worth a thread hand-off).
  void ParallelFor(int64_t n, const std::function<void(int64_t, int64_t)>& fn,
                   int64_t min_chunk = 1);

 private:
  void WorkerLoop(int index);
  void RunChunks(int participant);

  std::vector<std::thread> workers_;
  std::mutex call_mu_;  // serialises ParallelFor callers

  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable done_cv_;
  // Guarded by mu_:
  uint64_t generation_ = 0;
  int pending_workers_ = 0;
  bool stop_ = false;
  // Set before a generation starts, read-only while it runs:
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0;
  int num_chunks_ = 0;
};

}  // namespace kvmesh
