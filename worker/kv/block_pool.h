// BlockPool: the fixed set of KV-cache blocks of one worker and the prefix
// cache over them.
//
// Each block has a reference count (how many sequences use it). Full blocks
// may be registered under their chained hash (common/block_hash.h) together
// with their tokens; a later request whose prefix has the same hash and the
// same tokens reuses the block instead of recomputing it. Blocks nobody uses
// sit in a free list in LRU order (O(1) push/remove/pop); a free block keeps
// its cached contents until it is actually reused (evicted lazily), so
// "free" and "cached" overlap.
//
// Which free block goes first (KvEviction): least recently used, or
// adaptive: free blocks a later request reused sit in a list of their own,
// and the victim is the older of the two lists' oldest blocks, the reused
// one counted younger by a head start that AdaptiveOrder
// (worker/kv/adaptive_order.h) learns from the evicted blocks that come
// back. Its memory of evicted hashes costs up to about 250 bytes of host
// RAM per block of the pool.
//
// Retention (Anthropic's cache_control): a block may be retained until a
// time. Free retained blocks sit in a second LRU list that Allocate() takes
// from only when the ordinary free list runs short, after moving the blocks
// whose retention has passed back to the ordinary list's oldest end. So
// retained prefixes outlast others under pressure, yet never block an
// allocation: retention is a priority, not a pin.
//
// Eviction: when Allocate() reuses a free block whose hash has no other copy,
// the eviction hook (if set) sees the block first, while its contents are
// still intact, so the host tier can keep a copy (worker/kv/host_kv_tier.h).
//
// Running out of blocks is an ordinary outcome: Allocate() returns false and
// the caller (the scheduler) preempts or waits.
//
// Not thread-safe: owned by the engine loop thread.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

#include "common/block_hash.h"
#include "worker/kv/adaptive_order.h"
#include "worker/kv/kv_events.h"
#include "worker/kv/refill_meter.h"

namespace kvmesh {

class BlockPool {
 public:
  // Milliseconds of a steady clock (the retention clock); tests inject one.
  using NowMs = std::function<int64_t()>;
  static int64_t SteadyNowMs();
  // Called with a cached block about to be overwritten (its hash's last copy
  // in this pool), its hash, its chain parent (nullopt for a sequence's first
  // block) and its tokens.
  using EvictHook =
      std::function<void(int32_t block, const BlockHash& hash,
                         const std::optional<BlockHash>& parent, std::span<const int32_t> tokens)>;

  BlockPool(int32_t num_blocks, int block_size, NowMs now_ms = SteadyNowMs,
            KvEviction eviction = KvEviction::kLru);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int block_size() const { return block_size_; }
  // Blocks with no user (including those still holding cached contents).
  int32_t num_free() const { return num_free_; }
  int32_t num_used() const { return num_blocks() - num_free_; }
  // Free blocks whose cached contents could still be hit.
  int32_t num_free_cached() const { return num_free_cached_; }
  int64_t now_ms() const { return now_ms_(); }
  // Free blocks in the retained list.
  int32_t num_free_retained() const { return lists_[kRetained].size; }
  KvEviction eviction() const { return eviction_; }
  // Cached blocks (in use or free) that a later request reused.
  int32_t num_cached_reused() const { return num_cached_reused_; }
  // Adaptive eviction's head start for reused blocks, in blocks stored (see
  // AdaptiveOrder); 0 under least recently used.
  int64_t adaptive_head_start() const { return order_.head_start(); }
  // Of the blocks stored in about the last turnover of the pool, the share
  // it had evicted within one turnover before (RefillMeter): 0 with room,
  // towards 1 as the cache thrashes.
  double refill_ratio() const { return refills_.ratio(); }
  // Distinct hashes currently cached (in use or free).
  size_t num_cached_hashes() const { return by_hash_.size(); }

  int32_t ref_count(int32_t block) const { return blocks_[block].refs; }
  bool is_free(int32_t block) const { return blocks_[block].in_free_list; }

  void set_evict_hook(EvictHook hook) { evict_hook_ = std::move(hook); }

  // Takes `n` free blocks, in eviction order (KvEviction; retained blocks
  // last), with reference count 1, evicting any cached contents they held.
  // Allocates nothing and returns false when fewer than `n` are free.
  bool Allocate(int32_t n, std::vector<int32_t>* out);

  // A cached block holding `hash` and exactly `tokens`, or nullopt. No
  // reference is taken.
  std::optional<int32_t> FindCached(const BlockHash& hash, std::span<const int32_t> tokens) const;
  // A cached block holding `hash` (whatever its tokens), or nullopt: what a
  // peer asking by hash alone gets (it compares the tokens itself).
  std::optional<int32_t> FindByHash(const BlockHash& hash) const;
  // The tokens a cached block holds.
  std::span<const int32_t> tokens(int32_t block) const { return TokensOf(block); }

  // Takes one more reference on a block (removing it from the free list if
  // it was free).
  void Acquire(int32_t block);

  // Notes that a request other than the one that stored it reuses the
  // cached block, which it has acquired (a prefix hit): adaptive eviction
  // keeps reused blocks apart from those never reused.
  void NoteReuse(int32_t block);

  // Registers the full, computed block `block` under `hash` with its tokens.
  // `parent` is the hash of the previous block of the sequence (nullopt for
  // the first). Announces the hash if this is its first copy.
  void Cache(int32_t block, const BlockHash& hash, const std::optional<BlockHash>& parent,
             std::span<const int32_t> tokens);

  // Keeps `block` (its cached contents) until `until_ms` on the NowMs clock,
  // or longer if it already was.
  void Retain(int32_t block, int64_t until_ms);

  // Drops one reference on each block, in order; blocks reaching zero join
  // the free list's most-recently-used end in that order (so pass a
  // sequence's blocks last-first to have its tail evicted first).
  void Release(std::span<const int32_t> blocks);

  // Forgets every cached hash (blocks in use keep their data but will not be
  // shared any more). Returns how many hashes were dropped.
  int64_t ClearCache();

  // Every cached hash, for a subscriber's snapshot.
  std::vector<BlockHash> SnapshotHashes() const;

  // Events since the last call, in order.
  std::vector<KvEvent> TakeEvents();

 private:
  // Free lists: kOrdinary holds every unretained free block under least
  // recently used; under adaptive eviction, the cached ones never reused,
  // with kReused for the reused ones and kEmpty for those holding nothing
  // (taken first).
  enum ListId { kOrdinary = 0, kReused = 1, kRetained = 2, kEmpty = 3 };
  struct Block {
    int32_t refs = 0;
    bool in_free_list = false;
    bool cached = false;
    bool reused = false;      // cached and reused since it was stored
    ListId list = kOrdinary;  // which free list, when in_free_list
    uint64_t stamp = 0;       // when it joined the free list (AdaptiveOrder's clock)
    int64_t retain_until = 0;
    bool has_parent = false;
    BlockHash hash;
    BlockHash parent;
    int32_t prev = -1;  // free-list links
    int32_t next = -1;
  };
  struct FreeList {
    int32_t head = -1;  // least recently used
    int32_t tail = -1;  // most recently used
    int32_t size = 0;
  };

  void PushFree(int32_t id, ListId list, bool at_head = false);
  // The unretained free list a block of these contents belongs in.
  ListId OrdinaryList(const Block& b) const {
    if (eviction_ == KvEviction::kLru) return kOrdinary;
    return !b.cached ? kEmpty : b.reused ? kReused : kOrdinary;
  }
  // The unretained free block to evict next, or -1.
  int32_t NextVictim() const;
  void RemoveFromFreeList(int32_t id);
  // Moves retained free blocks whose time has passed to the ordinary list.
  void ExpireRetention();
  void Uncache(int32_t id);
  std::span<const int32_t> TokensOf(int32_t id) const {
    return {block_tokens_.data() + static_cast<size_t>(id) * block_size_,
            static_cast<size_t>(block_size_)};
  }

  int block_size_;
  std::vector<Block> blocks_;
  std::vector<int32_t> block_tokens_;  // block_size tokens per cached block
  NowMs now_ms_;
  KvEviction eviction_;
  FreeList lists_[4];
  int32_t num_free_ = 0;
  int32_t num_free_cached_ = 0;
  int32_t num_cached_reused_ = 0;
  AdaptiveOrder<BlockHash, BlockHashHasher> order_;
  RefillMeter<BlockHash, BlockHashHasher> refills_;
  // hash → every block holding it (duplicates arise when two sequences
  // computed the same block concurrently).
  std::unordered_map<BlockHash, std::vector<int32_t>, BlockHashHasher> by_hash_;
  std::vector<KvEvent> events_;
  EvictHook evict_hook_;
};

}  // namespace kvmesh
