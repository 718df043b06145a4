// HostKvTier: the host-RAM tier of the KV cache (--kv-host-memory).
//
// When the device pool (BlockPool) evicts the last copy of a cached block,
// the block's bytes, exactly as the executor stores them (quantized and
// transformed; Executor::ReadBlock's layout), are copied into a slot here,
// together with its hash, chain parent and tokens. A later prompt whose
// prefix runs past the device's cached blocks into this tier gets those
// blocks copied back into fresh device blocks instead of recomputing them
// (KvCacheManager). The tiers are exclusive: a restored block leaves this
// tier, so every cached block sits in exactly one LRU position, device
// blocks before host ones — one LRU across the tiers, whose oldest end is
// the host tier's and is dropped when the host tier is full.
//
// Copies may be asynchronous (a GPU's copy stream): a slot erased after a
// restore is quarantined until EndStep(), which the engine calls once the
// step's forward pass (which waits for the copies) has returned, so its bytes
// are not reused while a copy may still read them. Slots being restored are
// pinned, so a spill in the same allocation cannot evict them.
//
// Announces what it holds with KV events of tier kHost, like BlockPool does
// for the device tier. Not thread-safe: owned by the engine loop thread.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/block_hash.h"
#include "worker/kv/kv_events.h"

namespace kvmesh {

class HostKvTier {
 public:
  // A tier of floor(capacity_bytes / block_bytes) slots (possibly none).
  // Memory is reserved, not touched: a slot's pages are faulted in when it is
  // first written.
  HostKvTier(int64_t capacity_bytes, size_t block_bytes, int block_size);

  int32_t capacity() const { return static_cast<int32_t>(slots_.size()); }
  int32_t size() const { return num_held_; }
  size_t block_bytes() const { return block_bytes_; }
  int64_t capacity_bytes() const { return static_cast<int64_t>(block_bytes_) * capacity(); }

  // The slot holding `hash` with exactly `tokens`, or nullopt.
  std::optional<int32_t> Find(const BlockHash& hash, std::span<const int32_t> tokens) const;
  // The slot holding `hash` (whatever its tokens), or nullopt.
  std::optional<int32_t> FindByHash(const BlockHash& hash) const;

  struct Inserted {
    int32_t slot = -1;
    bool needs_copy = false;  // false: the hash was already held (now most recent)
  };
  // Registers a block being spilled at the most recent end, dropping the
  // least recent unpinned block when full. The caller copies the block's
  // bytes into Bytes(slot) when needs_copy. nullopt when no slot can be had
  // (no capacity, or every slot pinned or quarantined): the block is lost.
  std::optional<Inserted> Insert(const BlockHash& hash, const std::optional<BlockHash>& parent,
                                 std::span<const int32_t> tokens);
  // Forgets an inserted block whose copy failed.
  void Abandon(int32_t slot);

  std::span<uint8_t> Bytes(int32_t slot);
  std::span<const uint8_t> Bytes(int32_t slot) const;
  const BlockHash& hash(int32_t slot) const { return slots_[slot].hash; }
  std::optional<BlockHash> parent(int32_t slot) const;
  std::span<const int32_t> tokens(int32_t slot) const;

  // Pinned slots are never evicted by Insert.
  void Pin(int32_t slot);
  void Unpin(int32_t slot);

  // Removes a restored block (unpinning it); its memory is reused only after
  // EndStep().
  void Erase(int32_t slot);
  // The step's copies are done: quarantined slots become free.
  void EndStep();

  // Forgets every block (announced by the caller's AllCleared). Returns how
  // many were dropped.
  int64_t Clear();

  std::vector<BlockHash> SnapshotHashes() const;
  std::vector<KvEvent> TakeEvents();

 private:
  enum class State : uint8_t { kFree, kHeld, kQuarantined };
  struct Slot {
    State state = State::kFree;
    bool has_parent = false;
    int32_t pins = 0;
    BlockHash hash;
    BlockHash parent;
    int32_t prev = -1;  // LRU links among held slots (prev = older)
    int32_t next = -1;
  };

  void Link(int32_t slot);  // at the most recent end
  void Unlink(int32_t slot);
  void Drop(int32_t slot, State to);  // held → free or quarantined, announced
  void Announce(const KvEvent::Kind kind, const BlockHash& hash,
                const std::optional<BlockHash>& parent);

  size_t block_bytes_;
  int block_size_;
  std::unique_ptr<uint8_t[]> memory_;  // capacity × block_bytes, uninitialized
  std::vector<int32_t> tokens_;        // capacity × block_size
  std::vector<Slot> slots_;
  std::vector<int32_t> free_;         // free slot ids (a stack)
  std::vector<int32_t> quarantined_;  // erased this step
  std::unordered_map<BlockHash, int32_t, BlockHashHasher> by_hash_;
  int32_t lru_head_ = -1;  // least recent held slot
  int32_t lru_tail_ = -1;
  int32_t num_held_ = 0;
  std::vector<KvEvent> events_;
};

}  // namespace kvmesh
