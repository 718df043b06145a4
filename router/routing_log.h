// RoutingLog: what the status page shows of the router's own decisions — the
// most recent ones (bounded ring) with their reasons and predicted against
// reported cached tokens, and each worker's prefix-hit totals as this router
// saw them. Thread-safe; cheap enough to record every request.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace kvmesh::router {

struct RoutedRequest {
  int64_t unix_ms = 0;
  std::string request_id;
  std::string model;
  std::string worker;
  std::string policy;
  std::string reason;
  int32_t prompt_tokens = 0;
  int32_t predicted_cached = 0;
  int32_t reported_cached = -1;  // -1: not finished yet
};

struct WorkerHits {
  int64_t requests = 0;
  int64_t prompt_tokens = 0;
  int64_t cached_tokens = 0;
};

class RoutingLog {
 public:
  explicit RoutingLog(size_t capacity = 50) : capacity_(capacity) {}

  void Decided(RoutedRequest request);
  // The worker reported how much of the prompt it served from its cache.
  void Finished(const std::string& request_id, const std::string& worker, int32_t prompt_tokens,
                int32_t cached_tokens);

  std::vector<RoutedRequest> Recent() const;  // newest first
  std::map<std::string, WorkerHits> Hits() const;

 private:
  const size_t capacity_;
  mutable std::mutex mu_;
  std::deque<RoutedRequest> recent_;  // newest at the front
  std::map<std::string, WorkerHits> hits_;
};

}  // namespace kvmesh::router
