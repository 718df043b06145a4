#include "worker/kv/host_kv_tier.h"

#include <algorithm>
#include <cstring>

#include "common/check.h"

namespace kvmesh {

HostKvTier::HostKvTier(int64_t capacity_bytes, size_t block_bytes, int block_size)
    : block_bytes_(block_bytes), block_size_(block_size) {
  KVMESH_CHECK(block_bytes > 0 && block_size > 0 && capacity_bytes >= 0);
  const int64_t n = capacity_bytes / static_cast<int64_t>(block_bytes);
  KVMESH_CHECK(n < (int64_t{1} << 31));
  if (n > 0) {
    // Default-initialized: the kernel maps pages only when a slot is written.
    memory_.reset(new uint8_t[static_cast<size_t>(n) * block_bytes]);
  }
  tokens_.resize(static_cast<size_t>(n) * block_size);
  slots_.resize(static_cast<size_t>(n));
  free_.reserve(static_cast<size_t>(n));
  for (int64_t i = n - 1; i >= 0; --i) free_.push_back(static_cast<int32_t>(i));
}

std::optional<int32_t> HostKvTier::FindByHash(const BlockHash& hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  return it->second;
}

std::optional<int32_t> HostKvTier::Find(const BlockHash& hash,
                                        std::span<const int32_t> tokens) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  const auto stored = this->tokens(it->second);
  if (tokens.size() != stored.size() || !std::equal(tokens.begin(), tokens.end(), stored.begin())) {
    return std::nullopt;  // a hash collision: never share
  }
  return it->second;
}

std::optional<HostKvTier::Inserted> HostKvTier::Insert(const BlockHash& hash,
                                                       const std::optional<BlockHash>& parent,
                                                       std::span<const int32_t> tokens) {
  KVMESH_CHECK(static_cast<int>(tokens.size()) == block_size_);
  if (auto it = by_hash_.find(hash); it != by_hash_.end()) {
    const int32_t id = it->second;
    Unlink(id);
    Link(id);
    return Inserted{id, false};
  }
  if (free_.empty()) {
    int32_t victim = lru_head_;
    while (victim >= 0 && slots_[victim].pins > 0) victim = slots_[victim].next;
    if (victim < 0) return std::nullopt;
    Drop(victim, State::kFree);
  }
  if (free_.empty()) return std::nullopt;
  const int32_t id = free_.back();
  free_.pop_back();
  Slot& s = slots_[id];
  s.state = State::kHeld;
  s.pins = 0;
  s.hash = hash;
  s.has_parent = parent.has_value();
  if (parent) s.parent = *parent;
  std::memcpy(tokens_.data() + static_cast<size_t>(id) * block_size_, tokens.data(),
              tokens.size() * sizeof(int32_t));
  by_hash_[hash] = id;
  Link(id);
  ++num_held_;
  Announce(KvEvent::Kind::kStored, hash, parent);
  return Inserted{id, true};
}

void HostKvTier::Abandon(int32_t slot) { Drop(slot, State::kFree); }

std::span<uint8_t> HostKvTier::Bytes(int32_t slot) {
  return {memory_.get() + static_cast<size_t>(slot) * block_bytes_, block_bytes_};
}

std::span<const uint8_t> HostKvTier::Bytes(int32_t slot) const {
  return {memory_.get() + static_cast<size_t>(slot) * block_bytes_, block_bytes_};
}

std::optional<BlockHash> HostKvTier::parent(int32_t slot) const {
  const Slot& s = slots_[slot];
  return s.has_parent ? std::optional<BlockHash>(s.parent) : std::nullopt;
}

std::span<const int32_t> HostKvTier::tokens(int32_t slot) const {
  return {tokens_.data() + static_cast<size_t>(slot) * block_size_,
          static_cast<size_t>(block_size_)};
}

void HostKvTier::Pin(int32_t slot) {
  KVMESH_CHECK(slots_[slot].state == State::kHeld);
  ++slots_[slot].pins;
}

void HostKvTier::Unpin(int32_t slot) {
  KVMESH_CHECK(slots_[slot].pins > 0);
  --slots_[slot].pins;
}

void HostKvTier::Erase(int32_t slot) { Drop(slot, State::kQuarantined); }

void HostKvTier::EndStep() {
  for (int32_t id : quarantined_) {
    slots_[id].state = State::kFree;
    free_.push_back(id);
  }
  quarantined_.clear();
}

int64_t HostKvTier::Clear() {
  const int64_t n = num_held_;
  for (int32_t id = lru_head_; id >= 0;) {
    const int32_t next = slots_[id].next;
    Slot& s = slots_[id];
    s.prev = s.next = -1;
    s.pins = 0;
    // A slot may still be read by this step's copies: quarantine it.
    s.state = State::kQuarantined;
    quarantined_.push_back(id);
    id = next;
  }
  lru_head_ = lru_tail_ = -1;
  num_held_ = 0;
  by_hash_.clear();
  events_.clear();  // the caller's AllCleared supersedes them
  return n;
}

std::vector<BlockHash> HostKvTier::SnapshotHashes() const {
  std::vector<BlockHash> out;
  out.reserve(by_hash_.size());
  for (const auto& [hash, slot] : by_hash_) out.push_back(hash);
  return out;
}

std::vector<KvEvent> HostKvTier::TakeEvents() {
  std::vector<KvEvent> out;
  out.swap(events_);
  return out;
}

void HostKvTier::Link(int32_t id) {
  Slot& s = slots_[id];
  s.prev = lru_tail_;
  s.next = -1;
  if (lru_tail_ >= 0) {
    slots_[lru_tail_].next = id;
  } else {
    lru_head_ = id;
  }
  lru_tail_ = id;
}

void HostKvTier::Unlink(int32_t id) {
  Slot& s = slots_[id];
  if (s.prev >= 0) {
    slots_[s.prev].next = s.next;
  } else {
    lru_head_ = s.next;
  }
  if (s.next >= 0) {
    slots_[s.next].prev = s.prev;
  } else {
    lru_tail_ = s.prev;
  }
  s.prev = s.next = -1;
}

void HostKvTier::Drop(int32_t id, State to) {
  Slot& s = slots_[id];
  KVMESH_CHECK(s.state == State::kHeld);
  Unlink(id);
  by_hash_.erase(s.hash);
  --num_held_;
  s.pins = 0;
  s.state = to;
  if (to == State::kFree) {
    free_.push_back(id);
  } else {
    quarantined_.push_back(id);
  }
  Announce(KvEvent::Kind::kRemoved, s.hash, std::nullopt);
}

void HostKvTier::Announce(const KvEvent::Kind kind, const BlockHash& hash,
                          const std::optional<BlockHash>& parent) {
  if (!events_.empty() && events_.back().kind == kind) {
    KvEvent& last = events_.back();
    // Removals merge freely; a store continues the last one only along its chain.
    if (kind == KvEvent::Kind::kRemoved || (parent && last.hashes.back() == *parent)) {
      last.hashes.push_back(hash);
      return;
    }
  }
  events_.push_back(
      {kind, {hash}, kind == KvEvent::Kind::kStored ? parent : std::nullopt, CacheTier::kHost});
}

}  // namespace kvmesh
