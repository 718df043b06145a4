#include "router/gateway/response_store.h"

namespace kvmesh::router::gateway {

void ResponseStore::Put(const std::string& id, Entry entry) {
  size_t bytes = entry.response_json.size() + id.size();
  for (const v1::ChatMessage& m : entry.conversation) bytes += m.ByteSizeLong();
  if (bytes > options_.max_bytes || options_.max_entries == 0) return;  // never fits
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = entries_.find(id); it != entries_.end()) {
    bytes_ -= it->second.bytes;
    entries_.erase(it);
  }
  const uint64_t sequence = next_sequence_++;
  entries_[id] = Stored{std::move(entry), bytes, now_() + options_.ttl, sequence};
  order_.emplace_back(id, sequence);
  bytes_ += bytes;
  EvictLocked();
}

std::optional<ResponseStore::Entry> ResponseStore::Get(const std::string& id,
                                                       const std::string& owner) {
  std::lock_guard<std::mutex> lock(mu_);
  EvictLocked();
  auto it = entries_.find(id);
  if (it == entries_.end() || it->second.entry.owner != owner) return std::nullopt;
  return it->second.entry;
}

size_t ResponseStore::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return entries_.size();
}

size_t ResponseStore::bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return bytes_;
}

void ResponseStore::EvictLocked() {
  const Clock::time_point now = now_();
  while (!order_.empty()) {
    auto it = entries_.find(order_.front().first);
    // An id stored again sits later in the order too: drop stale positions.
    const bool stale = it == entries_.end() || it->second.sequence != order_.front().second;
    const bool over = entries_.size() > options_.max_entries || bytes_ > options_.max_bytes;
    const bool expired = !stale && it->second.expires <= now;
    if (!stale && !over && !expired) break;
    if (!stale && (over || expired)) {
      bytes_ -= it->second.bytes;
      entries_.erase(it);
    }
    order_.pop_front();
  }
}

}  // namespace kvmesh::router::gateway
