#include "router/routing_log.h"

namespace kvmesh::router {

void RoutingLog::Decided(RoutedRequest request) {
  std::lock_guard<std::mutex> lock(mu_);
  recent_.push_front(std::move(request));
  while (recent_.size() > capacity_) recent_.pop_back();
}

void RoutingLog::Finished(const std::string& request_id, const std::string& worker,
                          int32_t prompt_tokens, int32_t cached_tokens) {
  std::lock_guard<std::mutex> lock(mu_);
  for (RoutedRequest& r : recent_) {
    if (r.request_id == request_id && r.worker == worker) {
      r.reported_cached = cached_tokens;
      break;
    }
  }
  WorkerHits& h = hits_[worker];
  ++h.requests;
  h.prompt_tokens += prompt_tokens;
  h.cached_tokens += cached_tokens;
}

std::vector<RoutedRequest> RoutingLog::Recent() const {
  std::lock_guard<std::mutex> lock(mu_);
  return {recent_.begin(), recent_.end()};
}

std::map<std::string, WorkerHits> RoutingLog::Hits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return hits_;
}

}  // namespace kvmesh::router
