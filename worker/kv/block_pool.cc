#include "worker/kv/block_pool.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/check.h"

namespace kvmesh {

int64_t BlockPool::SteadyNowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

BlockPool::BlockPool(int32_t num_blocks, int block_size, NowMs now_ms, KvEviction eviction)
    : block_size_(block_size),
      blocks_(num_blocks),
      block_tokens_(static_cast<size_t>(num_blocks) * block_size),
      now_ms_(std::move(now_ms)),
      eviction_(eviction),
      order_(num_blocks),
      refills_(num_blocks) {
  KVMESH_CHECK(num_blocks > 0 && block_size > 0);
  for (int32_t i = 0; i < num_blocks; ++i) PushFree(i, OrdinaryList(blocks_[i]));
}

void BlockPool::PushFree(int32_t id, ListId list_id, bool at_head) {
  Block& b = blocks_[id];
  KVMESH_CHECK(!b.in_free_list && b.refs == 0);
  FreeList& list = lists_[list_id];
  b.in_free_list = true;
  b.list = list_id;
  b.stamp = at_head ? 0 : order_.Now();
  if (at_head) {
    b.prev = -1;
    b.next = list.head;
    if (list.head >= 0) {
      blocks_[list.head].prev = id;
    } else {
      list.tail = id;
    }
    list.head = id;
  } else {
    b.prev = list.tail;
    b.next = -1;
    if (list.tail >= 0) {
      blocks_[list.tail].next = id;
    } else {
      list.head = id;
    }
    list.tail = id;
  }
  ++list.size;
  ++num_free_;
  if (b.cached) ++num_free_cached_;
}

void BlockPool::RemoveFromFreeList(int32_t id) {
  Block& b = blocks_[id];
  KVMESH_CHECK(b.in_free_list);
  FreeList& list = lists_[b.list];
  if (b.prev >= 0) {
    blocks_[b.prev].next = b.next;
  } else {
    list.head = b.next;
  }
  if (b.next >= 0) {
    blocks_[b.next].prev = b.prev;
  } else {
    list.tail = b.prev;
  }
  b.prev = b.next = -1;
  b.in_free_list = false;
  --list.size;
  --num_free_;
  if (b.cached) --num_free_cached_;
}

void BlockPool::ExpireRetention() {
  const int64_t now = now_ms_();
  // Newest first, each pushed to the ordinary list's oldest end: the expired
  // blocks keep their relative order and go before every ordinary block.
  for (int32_t id = lists_[kRetained].tail; id >= 0;) {
    const int32_t prev = blocks_[id].prev;
    if (blocks_[id].retain_until <= now) {
      RemoveFromFreeList(id);
      PushFree(id, OrdinaryList(blocks_[id]), /*at_head=*/true);
    }
    id = prev;
  }
}

void BlockPool::Retain(int32_t block, int64_t until_ms) {
  Block& b = blocks_[block];
  b.retain_until = std::max(b.retain_until, until_ms);
  if (b.in_free_list && b.list != kRetained && b.retain_until > now_ms_()) {
    RemoveFromFreeList(block);
    PushFree(block, kRetained);
  }
}

void BlockPool::Uncache(int32_t id) {
  Block& b = blocks_[id];
  if (!b.cached) return;
  auto it = by_hash_.find(b.hash);
  KVMESH_CHECK(it != by_hash_.end());
  auto& copies = it->second;
  copies.erase(std::find(copies.begin(), copies.end(), id));
  if (copies.empty()) {
    by_hash_.erase(it);
    if (!events_.empty() && events_.back().kind == KvEvent::Kind::kRemoved) {
      events_.back().hashes.push_back(b.hash);
    } else {
      events_.push_back({KvEvent::Kind::kRemoved, {b.hash}, std::nullopt, CacheTier::kDevice});
    }
  }
  b.cached = false;
  if (b.reused) --num_cached_reused_;
  b.reused = false;
  if (b.in_free_list) --num_free_cached_;
}

int32_t BlockPool::NextVictim() const {
  const int32_t never_reused = lists_[kOrdinary].head;
  if (eviction_ == KvEviction::kLru) return never_reused;
  if (lists_[kEmpty].head >= 0) return lists_[kEmpty].head;
  const int32_t reused = lists_[kReused].head;
  auto stamp = [&](int32_t id) {
    return id >= 0 ? std::optional<uint64_t>(blocks_[id].stamp) : std::nullopt;
  };
  return order_.TakeNeverReused(stamp(never_reused), stamp(reused)) ? never_reused : reused;
}

bool BlockPool::Allocate(int32_t n, std::vector<int32_t>* out) {
  if (n > num_free_) return false;
  if (n > num_free_ - lists_[kRetained].size && lists_[kRetained].size > 0) {
    ExpireRetention();
  }
  for (int32_t i = 0; i < n; ++i) {
    int32_t id = NextVictim();
    if (id < 0) id = lists_[kRetained].head;
    RemoveFromFreeList(id);
    const Block& b = blocks_[id];
    if (b.cached && by_hash_.at(b.hash).size() == 1) {
      if (evict_hook_) {
        evict_hook_(id, b.hash, b.has_parent ? std::optional<BlockHash>(b.parent) : std::nullopt,
                    TokensOf(id));
      }
      if (eviction_ == KvEviction::kAdaptive) order_.Evicted(b.hash, b.reused);
      refills_.Evicted(b.hash);
    }
    Uncache(id);
    blocks_[id].refs = 1;
    blocks_[id].retain_until = 0;
    out->push_back(id);
  }
  return true;
}

std::optional<int32_t> BlockPool::FindCached(const BlockHash& hash,
                                             std::span<const int32_t> tokens) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return std::nullopt;
  for (int32_t id : it->second) {
    const auto stored = TokensOf(id);
    if (tokens.size() == stored.size() &&
        std::equal(tokens.begin(), tokens.end(), stored.begin())) {
      return id;
    }
  }
  return std::nullopt;  // a hash collision: never share
}

std::optional<int32_t> BlockPool::FindByHash(const BlockHash& hash) const {
  auto it = by_hash_.find(hash);
  if (it == by_hash_.end() || it->second.empty()) return std::nullopt;
  return it->second.front();
}

void BlockPool::Acquire(int32_t block) {
  Block& b = blocks_[block];
  if (b.in_free_list) RemoveFromFreeList(block);
  ++b.refs;
}

void BlockPool::NoteReuse(int32_t block) {
  Block& b = blocks_[block];
  KVMESH_CHECK(b.refs > 0);  // in use, so in no free list
  if (!b.cached || b.reused) return;
  b.reused = true;
  ++num_cached_reused_;
}

void BlockPool::Cache(int32_t block, const BlockHash& hash, const std::optional<BlockHash>& parent,
                      std::span<const int32_t> tokens) {
  Block& b = blocks_[block];
  KVMESH_CHECK(b.refs > 0 && !b.cached && static_cast<int>(tokens.size()) == block_size_);
  b.cached = true;
  // A block evicted lately and stored again counts as reused (and moves
  // adaptive eviction's head start).
  b.reused = eviction_ == KvEviction::kAdaptive && order_.Stored(hash);
  if (b.reused) ++num_cached_reused_;
  b.hash = hash;
  b.has_parent = parent.has_value();
  if (parent) b.parent = *parent;
  std::memcpy(block_tokens_.data() + static_cast<size_t>(block) * block_size_, tokens.data(),
              tokens.size() * sizeof(int32_t));
  auto& copies = by_hash_[hash];
  copies.push_back(block);
  if (copies.size() > 1) return;  // already announced
  order_.Tick();
  refills_.Stored(hash);
  // Extend the previous Stored event when this block continues its chain.
  if (!events_.empty() && events_.back().kind == KvEvent::Kind::kStored && parent &&
      events_.back().hashes.back() == *parent) {
    events_.back().hashes.push_back(hash);
  } else {
    events_.push_back({KvEvent::Kind::kStored, {hash}, parent, CacheTier::kDevice});
  }
}

void BlockPool::Release(std::span<const int32_t> blocks) {
  for (int32_t id : blocks) {
    Block& b = blocks_[id];
    KVMESH_CHECK(b.refs > 0);
    if (--b.refs > 0) continue;
    const bool retained = b.retain_until > 0 && b.retain_until > now_ms_();
    PushFree(id, retained ? kRetained : OrdinaryList(b));
  }
}

int64_t BlockPool::ClearCache() {
  const int64_t n = static_cast<int64_t>(by_hash_.size());
  for (auto& [hash, copies] : by_hash_) {
    for (int32_t id : copies) {
      Block& b = blocks_[id];
      b.cached = false;
      b.reused = false;
      if (!b.in_free_list) continue;
      --num_free_cached_;
      if (eviction_ == KvEviction::kAdaptive && b.list != kRetained) {  // now empty
        RemoveFromFreeList(id);
        PushFree(id, OrdinaryList(b), /*at_head=*/true);
      }
    }
  }
  by_hash_.clear();
  num_cached_reused_ = 0;
  events_.push_back({KvEvent::Kind::kAllCleared, {}, std::nullopt, CacheTier::kDevice});
  return n;
}

std::vector<BlockHash> BlockPool::SnapshotHashes() const {
  std::vector<BlockHash> out;
  out.reserve(by_hash_.size());
  for (const auto& [hash, copies] : by_hash_) out.push_back(hash);
  return out;
}

std::vector<KvEvent> BlockPool::TakeEvents() {
  std::vector<KvEvent> out;
  out.swap(events_);
  return out;
}

}  // namespace kvmesh
