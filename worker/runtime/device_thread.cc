#include "worker/runtime/device_thread.h"

#include <future>

#include "common/spin_wait.h"
#include "common/thread_pool.h"

namespace kvmesh {
namespace {

// Waits until `counter` differs from `seen`: spins about 100 µs, then sleeps.
uint32_t WaitForChange(const std::atomic<uint32_t>& counter, uint32_t seen) {
  SpinUntil([&] { return counter.load(std::memory_order_acquire) != seen; });
  for (;;) {
    counter.wait(seen, std::memory_order_acquire);
    const uint32_t now = counter.load(std::memory_order_acquire);
    if (now != seen) return now;
  }
}

}  // namespace

DeviceThread::DeviceThread(std::vector<int> cores) : cores_(std::move(cores)) {}

Status DeviceThread::Start() {
  std::promise<Status> pinned;
  std::future<Status> result = pinned.get_future();
  thread_ = std::thread([this, &pinned] {
    pinned.set_value(ThreadPool::PinCurrentThread(cores_));
    Loop();
  });
  return result.get();
}

DeviceThread::~DeviceThread() {
  if (!thread_.joinable()) return;
  stop_.store(true, std::memory_order_release);
  posted_.fetch_add(1, std::memory_order_acq_rel);
  posted_.notify_one();
  thread_.join();
}

void DeviceThread::Post(std::function<void()> job) {
  job_ = std::move(job);
  posted_.fetch_add(1, std::memory_order_acq_rel);
  posted_.notify_one();
}

void DeviceThread::Wait() {
  // The waiter sleeps at once: it has nothing else to do, and spinning would
  // take a core from the devices it waits for.
  const uint32_t target = posted_.load(std::memory_order_acquire);
  for (uint32_t done = finished_.load(std::memory_order_acquire); done != target;
       done = finished_.load(std::memory_order_acquire)) {
    finished_.wait(done, std::memory_order_acquire);
  }
}

void DeviceThread::Loop() {
  uint32_t seen = 0;
  for (;;) {
    seen = WaitForChange(posted_, seen);
    if (stop_.load(std::memory_order_acquire)) return;
    job_();
    finished_.fetch_add(1, std::memory_order_acq_rel);
    finished_.notify_one();
  }
}

}  // namespace kvmesh
