// RateTracker: a robust recent rate (tokens per second) — the median of the
// last `window` samples no older than `max_age`. Routers compare workers by
// these rates, and on a shared machine single steps are noisy (a preempted
// thread makes one step ten times slower); a median ignores such outliers
// where a moving average would follow them. Samples expire because a worker
// that stopped doing the work measured (one serving only cache hits, or
// fetching nothing since a slow fetch) would otherwise report, for good, a
// rate taken under other batches and other neighbours; with no sample left
// it reports 0, which routers read as "not measured" (docs/architecture.md,
// "The prefix policy"). Not thread-safe (one thread, or the caller's lock).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <vector>

namespace kvmesh {

class RateTracker {
 public:
  using Clock = std::chrono::steady_clock;

  explicit RateTracker(size_t window = 16, Clock::duration max_age = std::chrono::minutes(5))
      : window_(window), max_age_(max_age) {}

  void Add(double rate, Clock::time_point now = Clock::now()) {
    if (samples_.size() < window_) {
      samples_.push_back({rate, now});
    } else {
      samples_[next_] = {rate, now};
    }
    next_ = (next_ + 1) % window_;
  }

  // 0 when no sample is younger than max_age.
  double Median(Clock::time_point now = Clock::now()) const {
    std::vector<double> recent;
    recent.reserve(samples_.size());
    for (const Sample& s : samples_)
      if (now - s.at <= max_age_) recent.push_back(s.rate);
    if (recent.empty()) return 0;
    std::nth_element(recent.begin(), recent.begin() + recent.size() / 2, recent.end());
    return recent[recent.size() / 2];
  }

 private:
  struct Sample {
    double rate;
    Clock::time_point at;
  };
  size_t window_;
  Clock::duration max_age_;
  size_t next_ = 0;
  std::vector<Sample> samples_;
};

}  // namespace kvmesh
