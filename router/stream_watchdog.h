// StreamWatchdog: cancels worker streams that stop making progress.
//
// A request may take long — a 50k-token prompt prefills for minutes on a
// CPU — but it must keep moving: each token, and each prefill chunk the
// worker reports, counts as progress. A stream that goes `idle_timeout`
// without any is cancelled (its cancel function, e.g. TryCancel on its gRPC
// context or GenerateStream::Cancel), so a stuck
// worker cannot hold a client forever, while no deadline ever cuts off a
// prefill that is making progress.
//
// Thread-safety: Watch() and the Guard's Touch() and destructor may be
// called from any thread; one background thread checks the streams every
// `check_interval` and is joined by the destructor. What the cancel function
// touches must outlive its Guard (declare the Guard after the stream).
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <thread>

namespace kvmesh::router {

class StreamWatchdog {
 public:
  using Clock = std::chrono::steady_clock;

  StreamWatchdog(std::chrono::milliseconds idle_timeout,
                 std::chrono::milliseconds check_interval = std::chrono::milliseconds(200));
  ~StreamWatchdog();

  StreamWatchdog(const StreamWatchdog&) = delete;
  StreamWatchdog& operator=(const StreamWatchdog&) = delete;

  struct Entry {
    std::function<void()> cancel;
    std::atomic<Clock::rep> last_progress;
    std::atomic<bool> timed_out{false};
  };

  // Unwatches on destruction.
  class Guard {
   public:
    Guard(StreamWatchdog* watchdog, std::list<Entry>::iterator entry)
        : watchdog_(watchdog), entry_(entry) {}
    ~Guard();
    Guard(const Guard&) = delete;
    Guard& operator=(const Guard&) = delete;

    // The stream moved: restarts its idle clock.
    void Touch() { entry_->last_progress.store(Clock::now().time_since_epoch().count()); }
    // True once the watchdog cancelled the stream for idling.
    bool timed_out() const { return entry_->timed_out.load(); }

   private:
    StreamWatchdog* watchdog_;
    std::list<Entry>::iterator entry_;
  };

  // `cancel` is called once, on the watchdog's thread, if the stream idles.
  std::unique_ptr<Guard> Watch(std::function<void()> cancel);
  std::unique_ptr<Guard> Watch(grpc::ClientContext* context) {
    return Watch([context] { context->TryCancel(); });
  }

  std::chrono::milliseconds idle_timeout() const { return idle_timeout_; }

 private:
  void Run();

  const std::chrono::milliseconds idle_timeout_;
  const std::chrono::milliseconds check_interval_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::list<Entry> entries_;  // guarded by mutex_
  bool stopping_ = false;     // guarded by mutex_
  std::thread thread_;        // last: starts once every other member exists
};

}  // namespace kvmesh::router
