#include "worker/kv/kv_cache_manager.h"

#include <algorithm>

#include "common/check.h"

namespace kvmesh {

KvCacheManager::KvCacheManager(int32_t num_blocks, int block_size, bool enable_prefix_caching)
    : pool_(num_blocks, block_size), enable_prefix_caching_(enable_prefix_caching) {}

int32_t KvCacheManager::BlocksNeeded(int32_t have_blocks, int32_t num_tokens) const {
  const int32_t want = (num_tokens + block_size() - 1) / block_size();
  return want > have_blocks ? want - have_blocks : 0;
}

CachedPrefix KvCacheManager::FindCachedPrefix(const BlockHash& root,
                                              std::span<const int32_t> prompt) const {
  CachedPrefix prefix;
  prefix.block_size = block_size();
  if (!enable_prefix_caching_ || prompt.empty()) return prefix;
  const int bs = block_size();
  prefix.hashes = HashFullBlocks(root, prompt, bs);
  // Leave at least one token to compute.
  const size_t max_blocks = (prompt.size() - 1) / bs;
  for (size_t i = 0; i < prefix.hashes.size() && i < max_blocks; ++i) {
    auto block = pool_.FindCached(prefix.hashes[i], prompt.subspan(i * bs, bs));
    if (!block) break;
    prefix.blocks.push_back(*block);
  }
  return prefix;
}

bool KvCacheManager::AllocateSlots(SequenceBlocks* seq, int32_t num_tokens,
                                   const CachedPrefix* prefix) {
  const bool take_prefix = prefix != nullptr && !prefix->blocks.empty() && seq->table.empty();
  const int32_t prefix_blocks = take_prefix ? static_cast<int32_t>(prefix->blocks.size()) : 0;
  const int32_t fresh =
      BlocksNeeded(static_cast<int32_t>(seq->table.size()) + prefix_blocks, num_tokens);
  // Taking a free cached block removes it from the free list too.
  int32_t prefix_free = 0;
  for (int32_t i = 0; i < prefix_blocks; ++i) prefix_free += pool_.is_free(prefix->blocks[i]);
  if (fresh > pool_.num_free() - prefix_free) return false;
  if (take_prefix) {
    for (int32_t b : prefix->blocks) pool_.Acquire(b);
    seq->table = prefix->blocks;
    seq->hashes.assign(prefix->hashes.begin(), prefix->hashes.begin() + prefix_blocks);
    seq->num_cached_blocks = prefix_blocks;
  }
  if (fresh > 0) {
    const bool ok = pool_.Allocate(fresh, &seq->table);
    KVMESH_CHECK(ok);
  }
  return true;
}

bool KvCacheManager::Fork(const SequenceBlocks& parent, int32_t num_tokens, SequenceBlocks* child,
                          int32_t* copy_from, int32_t* copy_to) {
  const int32_t bs = block_size();
  const int32_t full = num_tokens / bs;
  const bool partial = num_tokens % bs != 0;
  KVMESH_CHECK(child->table.empty() &&
               static_cast<int32_t>(parent.table.size()) >= full + (partial ? 1 : 0));
  *copy_from = *copy_to = -1;
  if (partial && pool_.num_free() < 1) return false;
  child->root = parent.root;
  child->table.assign(parent.table.begin(), parent.table.begin() + full);
  for (int32_t b : child->table) pool_.Acquire(b);
  child->num_cached_blocks = std::min(parent.num_cached_blocks, full);
  child->hashes.assign(
      parent.hashes.begin(),
      parent.hashes.begin() + std::min<int32_t>(full, static_cast<int32_t>(parent.hashes.size())));
  if (partial) {
    const bool ok = pool_.Allocate(1, &child->table);
    KVMESH_CHECK(ok);
    *copy_from = parent.table[full];
    *copy_to = child->table.back();
  }
  return true;
}

void KvCacheManager::CommitComputed(SequenceBlocks* seq, std::span<const int32_t> tokens,
                                    int32_t num_computed) {
  if (!enable_prefix_caching_) return;
  const int bs = block_size();
  const int32_t full =
      std::min<int32_t>(num_computed / bs, static_cast<int32_t>(seq->table.size()));
  while (seq->num_cached_blocks < full) {
    const int32_t i = seq->num_cached_blocks;
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    const BlockHash parent = i == 0 ? seq->root : seq->hashes[i - 1];
    if (static_cast<int32_t>(seq->hashes.size()) <= i) {
      seq->hashes.push_back(ChainBlockHash(parent, block_tokens));
    }
    const BlockHash& hash = seq->hashes[i];
    // Another sequence may have cached the same block meanwhile: keep ours
    // (duplicates are legal; the hash is announced once).
    pool_.Cache(seq->table[i], hash, i == 0 ? std::nullopt : std::optional<BlockHash>(parent),
                block_tokens);
    ++seq->num_cached_blocks;
  }
}

void KvCacheManager::Retain(const SequenceBlocks& seq, int32_t num_tokens, int64_t for_ms) {
  const int32_t blocks =
      std::min(seq.num_cached_blocks, num_tokens / static_cast<int32_t>(pool_.block_size()));
  const int64_t until = pool_.now_ms() + for_ms;
  for (int32_t i = 0; i < blocks; ++i) pool_.Retain(seq.table[i], until);
}

void KvCacheManager::Release(SequenceBlocks* seq) {
  std::vector<int32_t> reversed(seq->table.rbegin(), seq->table.rend());
  pool_.Release(reversed);
  seq->table.clear();
  seq->hashes.clear();
  seq->num_cached_blocks = 0;
}

}  // namespace kvmesh
