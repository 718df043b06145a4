// ResponseStore: the Responses API's stored responses (store: true, the
// default), so a later request can continue one by previous_response_id and
// GET /v1/responses/{id} can fetch it. Memory is bounded: at most
// `max_entries` responses and `max_bytes` of them (conversation and response
// JSON), the oldest dropped first, each kept at most `ttl`. Thread-safe.
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kvmesh/v1/inference.pb.h"

namespace kvmesh::router::gateway {

struct ResponseStoreOptions {
  size_t max_entries = 4096;
  size_t max_bytes = 256u << 20;
  std::chrono::seconds ttl{std::chrono::hours(6)};
};

class ResponseStore {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ResponseStore(ResponseStoreOptions options = {},
                         std::function<Clock::time_point()> now = Clock::now)
      : options_(options), now_(std::move(now)) {}

  struct Entry {
    std::vector<v1::ChatMessage> conversation;  // input and output, instructions excluded
    std::string response_json;
    std::string owner;  // only requests of this owner (API key) see it
  };

  void Put(const std::string& id, Entry entry);
  // Empty when there is no such entry or it belongs to another owner.
  std::optional<Entry> Get(const std::string& id, const std::string& owner = "");
  size_t size() const;
  size_t bytes() const;

 private:
  struct Stored {
    Entry entry;
    size_t bytes = 0;
    Clock::time_point expires;
    uint64_t sequence = 0;  // which Put stored it
  };
  void EvictLocked();

  ResponseStoreOptions options_;
  std::function<Clock::time_point()> now_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Stored> entries_;
  std::deque<std::pair<std::string, uint64_t>> order_;  // (id, sequence), oldest first
  uint64_t next_sequence_ = 0;
  size_t bytes_ = 0;
};

}  // namespace kvmesh::router::gateway
