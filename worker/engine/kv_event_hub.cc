#include "worker/engine/kv_event_hub.h"

#include <algorithm>

namespace kvmesh {

bool KvSubscription::Next(KvEventBatch* out, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, timeout, [this] { return !queue_.empty() || closed_; });
  if (queue_.empty()) return false;
  *out = std::move(queue_.front());
  queue_.pop_front();
  return true;
}

bool KvSubscription::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return closed_ && queue_.empty();
}

bool KvSubscription::overflowed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return overflowed_;
}

void KvSubscription::Close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

KvEventHub::~KvEventHub() { CloseAll(); }

uint64_t KvEventHub::last_sequence() const {
  std::lock_guard<std::mutex> lock(mu_);
  return sequence_;
}

size_t KvEventHub::num_cached_hashes(CacheTier tier) const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_[TierIndex(tier)].size();
}

void KvEventHub::Publish(std::vector<KvEvent> events) {
  if (events.empty()) return;
  std::lock_guard<std::mutex> lock(mu_);
  for (const KvEvent& e : events) {
    auto& cached = cached_[TierIndex(e.tier)];
    switch (e.kind) {
      case KvEvent::Kind::kStored:
        cached.insert(e.hashes.begin(), e.hashes.end());
        break;
      case KvEvent::Kind::kRemoved:
        for (const BlockHash& h : e.hashes) cached.erase(h);
        break;
      case KvEvent::Kind::kAllCleared:
        for (auto& tier : cached_) tier.clear();
        break;
    }
  }
  KvEventBatch batch{epoch_, ++sequence_, false, std::move(events)};
  if (drop_ > 0) {
    --drop_;
    return;
  }
  size_t live = 0;
  for (auto& weak : subscribers_) {
    std::shared_ptr<KvSubscription> sub = weak.lock();
    if (!sub) continue;
    subscribers_[live++] = weak;
    {
      std::lock_guard<std::mutex> sub_lock(sub->mu_);
      if (sub->closed_) continue;
      if (sub->queue_.size() >= sub->max_queued_) {
        sub->overflowed_ = true;
        sub->closed_ = true;
      } else {
        sub->queue_.push_back(batch);
      }
    }
    sub->cv_.notify_all();
  }
  subscribers_.resize(live);
}

std::shared_ptr<KvSubscription> KvEventHub::Subscribe(size_t max_queued) {
  auto sub = std::make_shared<KvSubscription>();
  sub->max_queued_ = std::max<size_t>(1, max_queued);
  std::lock_guard<std::mutex> lock(mu_);
  KvEventBatch snapshot{epoch_, sequence_, true, {}};
  for (CacheTier tier : {CacheTier::kDevice, CacheTier::kHost}) {
    const auto& cached = cached_[TierIndex(tier)];
    if (cached.empty()) continue;
    snapshot.events.push_back(
        {KvEvent::Kind::kStored, {cached.begin(), cached.end()}, std::nullopt, tier});
  }
  sub->queue_.push_back(std::move(snapshot));
  subscribers_.push_back(sub);
  return sub;
}

void KvEventHub::CloseAll() {
  std::vector<std::shared_ptr<KvSubscription>> subs;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& weak : subscribers_) {
      if (auto s = weak.lock()) subs.push_back(std::move(s));
    }
    subscribers_.clear();
  }
  for (auto& s : subs) s->Close();
}

void KvEventHub::DropNextBatches(uint32_t batches) {
  std::lock_guard<std::mutex> lock(mu_);
  drop_ = batches;
}

uint32_t KvEventHub::batches_to_drop() const {
  std::lock_guard<std::mutex> lock(mu_);
  return drop_;
}

}  // namespace kvmesh
