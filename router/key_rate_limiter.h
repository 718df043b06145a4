// KeyRateLimiter: a token bucket per API key (--api-key-rate,
// --api-key-burst). Each key may start `rate` requests per second on
// average and `burst` at once; past that the front doors answer 429 (HTTP,
// with Retry-After) or RESOURCE_EXHAUSTED (gRPC), naming the limit. Keys are
// known by their index in the configured list, so the limiter holds no
// secret. Thread-safe.
#pragma once

#include <cstddef>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace kvmesh::router {

class KeyRateLimiter {
 public:
  // Seconds of a steady clock; tests inject one.
  using Now = std::function<double()>;
  static double SteadyNow();

  // `rate` 0: no limit. `burst` < 1 counts as 1.
  KeyRateLimiter(size_t keys, double rate, double burst, Now now = SteadyNow);

  bool enabled() const { return rate_ > 0; }
  double rate() const { return rate_; }
  // "2 requests/s per API key, bursts of 10", for error messages.
  std::string Describe() const;
  // Takes a token of key `key` and returns 0, or returns the seconds until
  // it will have one (taking nothing).
  double Acquire(size_t key);

 private:
  struct Bucket {
    double tokens = 0;
    double at = 0;  // when `tokens` was right
  };
  double rate_;
  double burst_;
  Now now_;
  std::mutex mu_;
  std::vector<Bucket> buckets_;  // guarded by mu_
};

}  // namespace kvmesh::router
