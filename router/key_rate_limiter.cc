#include "router/key_rate_limiter.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace kvmesh::router {

double KeyRateLimiter::SteadyNow() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

KeyRateLimiter::KeyRateLimiter(size_t keys, double rate, double burst, Now now)
    : rate_(std::max(0.0, rate)), burst_(std::max(1.0, burst)), now_(std::move(now)) {
  const double t = now_();
  buckets_.assign(keys, Bucket{burst_, t});
}

std::string KeyRateLimiter::Describe() const {
  char text[96];
  std::snprintf(text, sizeof text, "%g requests/s per API key, bursts of %g", rate_, burst_);
  return text;
}

double KeyRateLimiter::Acquire(size_t key) {
  if (!enabled() || key >= buckets_.size()) return 0;
  std::lock_guard<std::mutex> lock(mu_);
  const double t = now_();  // under the lock: `at` never moves backwards
  Bucket& b = buckets_[key];
  b.tokens = std::min(burst_, b.tokens + (t - b.at) * rate_);
  b.at = t;
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return 0;
  }
  return (1 - b.tokens) / rate_;
}

}  // namespace kvmesh::router
