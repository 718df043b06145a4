// KvCacheManager: the blocks of every running sequence, on top of BlockPool.
//
// A sequence's block table is append-only: block i holds token positions
// [i*B, (i+1)*B). When a sequence is admitted, the longest prefix of its
// prompt made of cached full blocks (same chained hash, same tokens) is
// reused; only the rest is computed. As positions get computed, every block
// that becomes full is registered in the cache so later requests can reuse
// it. At least one prompt token is always left to compute, so the engine
// gets the logits it needs to sample.
//
// With a host tier (EnableHostTier), blocks the device pool evicts are
// copied to host RAM first, and a prefix that continues past the device's
// cached blocks into host blocks gets those copied back into fresh device
// blocks instead of being recomputed (see worker/kv/host_kv_tier.h).
//
// Each full block of a sequence is hashed once: the hashes are kept in
// SequenceBlocks and survive Release (preemption), since they depend only on
// the tokens.
//
// With window pages (EnableWindowPages), the model's sliding-window layers
// keep pages of their own in a second pool, one per block of the block
// table (SequenceBlocks::window_table). Once no later position of a
// sequence can attend to a block (it lies wholly before the window of the
// next position to compute), ReleaseOutsideWindow gives its window page
// back: the pool then holds a window's worth of pages per running sequence
// instead of whole contexts. The window pages are cached under the block
// hashes like the others (but not announced to routers), and a cached
// prefix counts only as far as the window pages its next position needs are
// cached too. Window pages exclude the host tier and page transfer (a
// block's bytes are no longer one id's pages).
//
// Running out of blocks is an ordinary outcome (AllocateSlots returns false
// and changes nothing); the scheduler then preempts a sequence or waits.
//
// Not thread-safe: owned by the engine loop thread.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "common/block_hash.h"
#include "common/status.h"
#include "worker/kv/block_pool.h"
#include "worker/kv/host_kv_tier.h"
#include "worker/kv/kv_pages.h"

namespace kvmesh {

// The KV state of one sequence.
struct SequenceBlocks {
  BlockHash root;              // chain root (model identity + cache salt)
  std::vector<int32_t> table;  // block ids, in position order
  // With window pages: the window page of each block of `table`, -1 once
  // released.
  std::vector<int32_t> window_table;
  int32_t window_released = 0;    // leading window_table entries released
  std::vector<BlockHash> hashes;  // hashes of the leading full blocks known so far
  int32_t num_cached_blocks = 0;  // leading blocks registered in (or taken from) the cache
  // Released before (preempted): its prefix hits are its own blocks, not a
  // reuse by another request.
  bool released = false;
};

// A cached prefix found for a prompt; holds no references by itself.
struct CachedPrefix {
  std::vector<int32_t> blocks;      // device blocks of the first blocks.size() positions
  std::vector<int32_t> host_slots;  // host-tier slots of the blocks after those
  // With window pages: the cached window pages of blocks
  // [window_first, blocks.size()), what the next position attends to.
  std::vector<int32_t> window_blocks;
  int32_t window_first = 0;
  int32_t num_blocks() const { return static_cast<int32_t>(blocks.size() + host_slots.size()); }
  int32_t num_tokens() const { return num_blocks() * block_size; }
  int32_t block_size = 0;
};

// Moves one block's bytes (Executor::ReadBlock's layout) between the device
// pool and host memory. A copy may be asynchronous if the executor orders it
// before its next forward pass and keeps copies in issue order.
class KvBlockCopier {
 public:
  virtual ~KvBlockCopier() = default;
  virtual Status ToHost(int32_t block, std::span<uint8_t> host) = 0;
  virtual Status FromHost(std::span<const uint8_t> host, int32_t block) = 0;
};

// Cumulative counts of the cache's tiers (metrics).
struct KvTierStats {
  int64_t device_hit_blocks = 0;  // prompt blocks found on the device
  int64_t host_hit_blocks = 0;    // prompt blocks restored from the host tier
  int64_t spilled_blocks = 0;
  int64_t spilled_bytes = 0;
  double spill_seconds = 0;
  int64_t dropped_spills = 0;  // evicted blocks the host tier could not take
  int64_t restored_bytes = 0;
  double restore_seconds = 0;
  int64_t failed_copies = 0;
  int64_t blocks_hashed = 0;
  int64_t imported_blocks = 0;  // pages from peers put in the device pool
  int64_t exported_blocks = 0;  // pages read out for peers
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t num_blocks, int block_size, bool enable_prefix_caching = true,
                 KvEviction eviction = KvEviction::kLru);

  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  int block_size() const { return pool_.block_size(); }
  bool prefix_caching() const { return enable_prefix_caching_; }

  // Adds a host tier of `capacity_bytes` (whole blocks of `block_bytes`);
  // `copier` must outlive the manager. Does nothing when prefix caching is
  // off.
  void EnableHostTier(int64_t capacity_bytes, size_t block_bytes, KvBlockCopier* copier);
  // The copier for pages moved to and from peers (ImportPages, ExportPages),
  // blocks of `block_bytes`; must outlive the manager.
  void SetCopier(KvBlockCopier* copier, size_t block_bytes);
  const HostKvTier* host_tier() const { return host_.get(); }
  // Gives the sliding-window layers `window_blocks` pages of their own, for
  // windows of `window` positions (the widest layer's). Before anything is
  // allocated, and never with a host tier.
  void EnableWindowPages(int32_t window_blocks, int32_t window);
  bool window_pages() const { return window_pool_ != nullptr; }
  // The window pages' pool, or null.
  const BlockPool* window_pool() const { return window_pool_.get(); }
  const KvTierStats& stats() const { return stats_; }

  // Extends seq->hashes to every full block of `tokens` (the sequence's
  // tokens so far), hashing only blocks not hashed before.
  void HashBlocks(SequenceBlocks* seq, std::span<const int32_t> tokens);

  // The longest cached prefix of `prompt` (whole blocks, at most
  // prompt.size() - 1 tokens): device blocks, then host blocks. Hashes the
  // prompt's blocks not hashed yet; no other side effects. The prefix holds
  // no references or pins: pass it to AllocateSlots before anything else
  // allocates or frees blocks.
  CachedPrefix FindCachedPrefix(SequenceBlocks* seq, std::span<const int32_t> prompt);

  // Makes `seq` cover positions [0, num_tokens): on a new sequence first
  // takes the blocks of `prefix` (may be empty; host blocks are copied into
  // fresh device blocks), then allocates fresh blocks for the rest. Returns
  // false, changing nothing, if not enough blocks are free. The valid
  // prefix is seq->num_cached_blocks blocks: fewer than the prefix's if a
  // host copy failed.
  bool AllocateSlots(SequenceBlocks* seq, int32_t num_tokens, const CachedPrefix* prefix = nullptr);

  // Starts `child` as a copy of the first `num_tokens` positions of
  // `parent` (a fresh sequence): it shares the parent's full blocks and gets
  // a fresh block for a partly filled last one, whose contents the caller
  // copies from `*copy_from` to `*copy_to` (both -1 when there is none).
  // Returns false, changing nothing, when that block cannot be had.
  bool Fork(const SequenceBlocks& parent, int32_t num_tokens, SequenceBlocks* child,
            int32_t* copy_from, int32_t* copy_to);

  // Registers every block of `seq` that is full within the first
  // `num_computed` positions of `tokens` (the sequence's tokens so far).
  void CommitComputed(SequenceBlocks* seq, std::span<const int32_t> tokens, int32_t num_computed);

  // Retains (BlockPool::Retain) the sequence's cached blocks that lie wholly
  // within its first `num_tokens` positions, for `for_ms` from now; with
  // window pages, also the cached window pages of the last WindowSpan() of
  // those blocks (found by hash when the sequence released them).
  void Retain(const SequenceBlocks& seq, int32_t num_tokens, int64_t for_ms);

  // Returns all of the sequence's blocks (its tail is evicted first) and
  // empties its block table (its hashes stay).
  void Release(SequenceBlocks* seq);
  // A prefix to retain (Retain) once the sequence ends, known from its start.
  struct RetainedPrefix {
    int32_t tokens = 0;
    int64_t for_ms = 0;
  };
  // With window pages: releases the window pages of the blocks that lie
  // wholly before the window of position `next_pos` (the next to compute),
  // oldest first. Call after CommitComputed, so they stay cached. A page in
  // the window tail of a `retained` prefix (what a hit there attends to) is
  // retained from now, so that it outlasts the sequence like the prefix.
  void ReleaseOutsideWindow(SequenceBlocks* seq, int32_t next_pos,
                            std::span<const RetainedPrefix> retained = {});

  // Puts pages computed elsewhere (already checked by CheckPeerPages) into
  // the device pool as cached blocks. The pages are blocks first_block,
  // first_block + 1, … of `prompt`, whose full blocks hash to `hashes`. Each
  // page not on the device gets a fresh device block (evicting the least
  // recent free one, as a computed block would) and is registered under its
  // hash; one the host tier holds leaves it (the tiers are exclusive, and a
  // prefix is device blocks first). Meanwhile the prompt's device blocks
  // before first_block and the pages already there are held, so the
  // allocations cannot evict what the pages attach to. At the end all are
  // released at the most recent end of the LRU, so the request that asked
  // for the pages finds them as a device hit. Stops when no block is free or
  // a copy fails. Returns how many leading pages are now on the device.
  int32_t ImportPages(std::span<const BlockHash> hashes, std::span<const int32_t> prompt,
                      int32_t first_block, std::span<const KvPage> pages);
  // The leading run of `hashes` cached in either tier, as pages (device
  // blocks read through the copier), as long as the pages' bytes stay within
  // `max_bytes`. Changes no LRU order.
  std::vector<KvPage> ExportPages(std::span<const BlockHash> hashes, size_t max_bytes);

  // Forgets every cached block in every tier; returns how many hashes were
  // dropped.
  int64_t ClearCache();
  // The step's forward pass has returned (host copies are done).
  void EndStep();
  // Hashes cached in each tier, for a subscriber's snapshot.
  std::vector<BlockHash> SnapshotHashes(CacheTier tier) const;
  // Events of every tier since the last call (each tier's in order).
  std::vector<KvEvent> TakeEvents();

  // Window pages the first position after `num_blocks` blocks attends to:
  // those of blocks [num_blocks - WindowSpan(), num_blocks).
  int32_t WindowSpan() const;

  // Blocks needed to grow from `have_blocks` to cover `num_tokens` positions.
  int32_t BlocksNeeded(int32_t have_blocks, int32_t num_tokens) const;

 private:
  // Copies host blocks into seq's table after its num_cached_blocks device
  // blocks, registering each; stops at a failed copy.
  void RestoreFromHost(SequenceBlocks* seq, std::span<const int32_t> slots);
  void Spill(int32_t block, const BlockHash& hash, const std::optional<BlockHash>& parent,
             std::span<const int32_t> tokens);

  BlockPool pool_;
  std::unique_ptr<BlockPool> window_pool_;  // with window pages
  int32_t window_ = 0;                      // with window pages
  bool enable_prefix_caching_;
  std::unique_ptr<HostKvTier> host_;
  KvBlockCopier* copier_ = nullptr;
  size_t block_bytes_ = 0;  // with a copier
  KvTierStats stats_;
};

}  // namespace kvmesh
