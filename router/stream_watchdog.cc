#include "router/stream_watchdog.h"

namespace kvmesh::router {

StreamWatchdog::StreamWatchdog(std::chrono::milliseconds idle_timeout,
                               std::chrono::milliseconds check_interval)
    : idle_timeout_(idle_timeout), check_interval_(check_interval), thread_([this] { Run(); }) {}

StreamWatchdog::~StreamWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

std::unique_ptr<StreamWatchdog::Guard> StreamWatchdog::Watch(std::function<void()> cancel) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_.emplace_front();
  Entry& entry = entries_.front();
  entry.cancel = std::move(cancel);
  entry.last_progress.store(Clock::now().time_since_epoch().count());
  return std::make_unique<Guard>(this, entries_.begin());
}

StreamWatchdog::Guard::~Guard() {
  // Under the lock, so the watchdog never cancels a stream being destroyed.
  std::lock_guard<std::mutex> lock(watchdog_->mutex_);
  watchdog_->entries_.erase(entry_);
}

void StreamWatchdog::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, check_interval_);
    const Clock::rep now = Clock::now().time_since_epoch().count();
    const Clock::rep limit = std::chrono::duration_cast<Clock::duration>(idle_timeout_).count();
    for (Entry& entry : entries_) {
      if (entry.timed_out.load() || now - entry.last_progress.load() <= limit) continue;
      entry.timed_out.store(true);
      entry.cancel();
    }
  }
}

}  // namespace kvmesh::router
