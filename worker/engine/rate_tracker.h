// RateTracker: a robust recent rate (tokens per second) — the median of the
// last `window` samples. Routers compare workers by these rates, and on a
// shared machine single steps are noisy (a preempted thread makes one step
// ten times slower); a median ignores such outliers where a moving average
// would follow them. Not thread-safe (engine loop only).
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace kvmesh {

class RateTracker {
 public:
  explicit RateTracker(size_t window = 16) : window_(window) {}

  void Add(double rate) {
    if (samples_.size() < window_) {
      samples_.push_back(rate);
    } else {
      samples_[next_] = rate;
    }
    next_ = (next_ + 1) % window_;
  }

  // 0 when there is no sample yet.
  double Median() const {
    if (samples_.empty()) return 0;
    std::vector<double> sorted = samples_;
    std::nth_element(sorted.begin(), sorted.begin() + sorted.size() / 2, sorted.end());
    return sorted[sorted.size() / 2];
  }

 private:
  size_t window_;
  size_t next_ = 0;
  std::vector<double> samples_;
};

}  // namespace kvmesh
