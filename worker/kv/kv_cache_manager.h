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
// Running out of blocks is an ordinary outcome (AllocateSlots returns false
// and changes nothing); the scheduler then preempts a sequence or waits.
//
// Not thread-safe: owned by the engine loop thread.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "common/block_hash.h"
#include "worker/kv/block_pool.h"

namespace kvmesh {

// The KV state of one sequence.
struct SequenceBlocks {
  BlockHash root;                 // chain root (model identity + cache salt)
  std::vector<int32_t> table;     // block ids, in position order
  std::vector<BlockHash> hashes;  // hashes of the leading full blocks known so far
  int32_t num_cached_blocks = 0;  // leading blocks registered in (or taken from) the cache
};

// A cached prefix found for a prompt; holds no references by itself.
struct CachedPrefix {
  std::vector<int32_t> blocks;
  std::vector<BlockHash> hashes;  // of every full block of the prompt
  int32_t num_tokens() const { return static_cast<int32_t>(blocks.size()) * block_size; }
  int32_t block_size = 0;
};

class KvCacheManager {
 public:
  KvCacheManager(int32_t num_blocks, int block_size, bool enable_prefix_caching = true);

  BlockPool& pool() { return pool_; }
  const BlockPool& pool() const { return pool_; }
  int block_size() const { return pool_.block_size(); }
  bool prefix_caching() const { return enable_prefix_caching_; }

  // The longest cached prefix of `prompt` (whole blocks, at most
  // prompt.size() - 1 tokens). No side effects.
  CachedPrefix FindCachedPrefix(const BlockHash& root, std::span<const int32_t> prompt) const;

  // Makes `seq` cover positions [0, num_tokens): on a new sequence first
  // takes the blocks of `prefix` (may be empty), then allocates fresh blocks
  // for the rest. Returns false, changing nothing, if not enough blocks are
  // free.
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
  // within its first `num_tokens` positions, for `for_ms` from now.
  void Retain(const SequenceBlocks& seq, int32_t num_tokens, int64_t for_ms);

  // Returns all of the sequence's blocks (its tail is evicted first) and
  // resets it.
  void Release(SequenceBlocks* seq);

  // Blocks needed to grow from `have_blocks` to cover `num_tokens` positions.
  int32_t BlocksNeeded(int32_t have_blocks, int32_t num_tokens) const;

 private:
  BlockPool pool_;
  bool enable_prefix_caching_;
};

}  // namespace kvmesh
