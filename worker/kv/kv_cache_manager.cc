#include "worker/kv/kv_cache_manager.h"

#include <algorithm>
#include <chrono>
#include <iterator>

#include "common/check.h"

namespace kvmesh {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

KvCacheManager::KvCacheManager(int32_t num_blocks, int block_size, bool enable_prefix_caching,
                               KvEviction eviction)
    : pool_(num_blocks, block_size, BlockPool::SteadyNowMs, eviction),
      enable_prefix_caching_(enable_prefix_caching) {}

int32_t KvCacheManager::BlocksNeeded(int32_t have_blocks, int32_t num_tokens) const {
  const int32_t want = (num_tokens + block_size() - 1) / block_size();
  return want > have_blocks ? want - have_blocks : 0;
}

int32_t KvCacheManager::WindowSpan() const {
  return window_ <= 1 ? 0 : (window_ - 1 + block_size() - 1) / block_size();
}

void KvCacheManager::EnableWindowPages(int32_t window_blocks, int32_t window) {
  KVMESH_CHECK(host_ == nullptr && window_pool_ == nullptr && window_blocks > 0 && window > 0 &&
               pool_.num_used() == 0);
  window_pool_ = std::make_unique<BlockPool>(window_blocks, block_size(), BlockPool::SteadyNowMs,
                                             pool_.eviction());
  window_ = window;
}

void KvCacheManager::EnableHostTier(int64_t capacity_bytes, size_t block_bytes,
                                    KvBlockCopier* copier) {
  if (!enable_prefix_caching_ || capacity_bytes <= 0) return;
  KVMESH_CHECK(copier != nullptr && window_pool_ == nullptr);
  host_ = std::make_unique<HostKvTier>(capacity_bytes, block_bytes, block_size());
  SetCopier(copier, block_bytes);
  pool_.set_evict_hook(
      [this](int32_t block, const BlockHash& hash, const std::optional<BlockHash>& parent,
             std::span<const int32_t> tokens) { Spill(block, hash, parent, tokens); });
}

void KvCacheManager::SetCopier(KvBlockCopier* copier, size_t block_bytes) {
  KVMESH_CHECK(copier != nullptr && block_bytes > 0);
  copier_ = copier;
  block_bytes_ = block_bytes;
}

int32_t KvCacheManager::ImportPages(std::span<const BlockHash> hashes,
                                    std::span<const int32_t> prompt, int32_t first_block,
                                    std::span<const KvPage> pages) {
  if (!enable_prefix_caching_ || copier_ == nullptr || window_pool_ || first_block < 0) return 0;
  const size_t bs = static_cast<size_t>(block_size());
  std::vector<int32_t> held;
  // The prompt's device prefix before the pages stays put meanwhile.
  for (size_t i = 0;
       i < static_cast<size_t>(first_block) && i < hashes.size() && (i + 1) * bs <= prompt.size();
       ++i) {
    const auto block = pool_.FindCached(hashes[i], prompt.subspan(i * bs, bs));
    if (!block) break;
    pool_.Acquire(*block);
    held.push_back(*block);
  }
  int32_t cached = 0;
  for (const KvPage& page : pages) {
    const size_t i = static_cast<size_t>(first_block) + cached;
    if (page.bytes.size() != block_bytes_ || page.tokens.size() != bs) break;
    if (const auto block = pool_.FindCached(page.hash, page.tokens)) {
      pool_.Acquire(*block);
      held.push_back(*block);
      ++cached;
      continue;
    }
    std::vector<int32_t> fresh;
    if (!pool_.Allocate(1, &fresh)) break;
    if (!copier_->FromHost(page.bytes, fresh[0]).ok()) {
      ++stats_.failed_copies;
      pool_.Release(fresh);  // never cached: its contents are not trusted
      break;
    }
    const std::optional<BlockHash> parent =
        i == 0 || i > hashes.size() ? std::nullopt : std::optional<BlockHash>(hashes[i - 1]);
    pool_.Cache(fresh[0], page.hash, parent, page.tokens);
    if (host_) {
      if (const auto slot = host_->Find(page.hash, page.tokens)) host_->Erase(*slot);
    }
    held.push_back(fresh[0]);
    ++stats_.imported_blocks;
    ++cached;
  }
  std::vector<int32_t> reversed(held.rbegin(), held.rend());  // the tail is evicted first
  pool_.Release(reversed);
  return cached;
}

std::vector<KvPage> KvCacheManager::ExportPages(std::span<const BlockHash> hashes,
                                                size_t max_bytes) {
  std::vector<KvPage> pages;
  if (!enable_prefix_caching_ || copier_ == nullptr || window_pool_) return pages;
  size_t bytes = 0;
  for (const BlockHash& hash : hashes) {
    if (bytes + block_bytes_ > max_bytes) break;
    KvPage page;
    page.hash = hash;
    page.bytes.resize(block_bytes_);
    if (auto block = pool_.FindByHash(hash)) {
      const auto tokens = pool_.tokens(*block);
      page.tokens.assign(tokens.begin(), tokens.end());
      if (!copier_->ToHost(*block, page.bytes).ok()) {
        ++stats_.failed_copies;
        break;
      }
    } else if (auto slot = host_ ? host_->FindByHash(hash) : std::nullopt) {
      const auto tokens = host_->tokens(*slot);
      page.tokens.assign(tokens.begin(), tokens.end());
      const auto stored = host_->Bytes(*slot);
      std::copy(stored.begin(), stored.end(), page.bytes.begin());
    } else {
      break;
    }
    bytes += block_bytes_;
    ++stats_.exported_blocks;
    pages.push_back(std::move(page));
  }
  return pages;
}

void KvCacheManager::Spill(int32_t block, const BlockHash& hash,
                           const std::optional<BlockHash>& parent,
                           std::span<const int32_t> tokens) {
  const std::optional<HostKvTier::Inserted> in = host_->Insert(hash, parent, tokens);
  if (!in) {
    ++stats_.dropped_spills;
    return;
  }
  if (!in->needs_copy) return;
  const auto t0 = std::chrono::steady_clock::now();
  if (!copier_->ToHost(block, host_->Bytes(in->slot)).ok()) {
    host_->Abandon(in->slot);
    ++stats_.failed_copies;
    return;
  }
  stats_.spill_seconds += SecondsSince(t0);
  ++stats_.spilled_blocks;
  stats_.spilled_bytes += static_cast<int64_t>(host_->block_bytes());
}

void KvCacheManager::HashBlocks(SequenceBlocks* seq, std::span<const int32_t> tokens) {
  const size_t bs = static_cast<size_t>(block_size());
  for (size_t i = seq->hashes.size(); (i + 1) * bs <= tokens.size(); ++i) {
    const BlockHash& parent = i == 0 ? seq->root : seq->hashes[i - 1];
    seq->hashes.push_back(ChainBlockHash(parent, tokens.subspan(i * bs, bs)));
    ++stats_.blocks_hashed;
  }
}

CachedPrefix KvCacheManager::FindCachedPrefix(SequenceBlocks* seq,
                                              std::span<const int32_t> prompt) {
  CachedPrefix prefix;
  prefix.block_size = block_size();
  if (!enable_prefix_caching_ || prompt.empty()) return prefix;
  const size_t bs = static_cast<size_t>(block_size());
  HashBlocks(seq, prompt);
  // Leave at least one token to compute.
  const size_t max_blocks = std::min((prompt.size() - 1) / bs, seq->hashes.size());
  size_t i = 0;
  for (; i < max_blocks; ++i) {
    auto block = pool_.FindCached(seq->hashes[i], prompt.subspan(i * bs, bs));
    if (!block) break;
    prefix.blocks.push_back(*block);
  }
  if (window_pool_) {
    // The prefix ends where the window pages its next position attends to
    // are all cached: scanning down from its end, a missing page moves the
    // end before it.
    const int32_t span = WindowSpan();
    int32_t end = static_cast<int32_t>(prefix.blocks.size());
    std::vector<int32_t> tail;  // window pages of blocks [j + 1, end), last first
    for (int32_t j = end - 1; j >= 0 && j >= end - span; --j) {
      const auto page = window_pool_->FindCached(seq->hashes[j], prompt.subspan(j * bs, bs));
      if (!page) {
        end = j;
        tail.clear();
        continue;
      }
      tail.push_back(*page);
    }
    prefix.blocks.resize(end);
    prefix.window_first = end - static_cast<int32_t>(tail.size());
    prefix.window_blocks.assign(tail.rbegin(), tail.rend());
  }
  if (host_ == nullptr) return prefix;
  // Device blocks first, then host blocks: a device block after a host one
  // (computed again while its copy sat on the host) ends the prefix.
  for (; i < max_blocks; ++i) {
    auto slot = host_->Find(seq->hashes[i], prompt.subspan(i * bs, bs));
    if (!slot) break;
    prefix.host_slots.push_back(*slot);
  }
  return prefix;
}

bool KvCacheManager::AllocateSlots(SequenceBlocks* seq, int32_t num_tokens,
                                   const CachedPrefix* prefix) {
  const bool take_prefix = prefix != nullptr && prefix->num_blocks() > 0 && seq->table.empty();
  const int32_t device_blocks = take_prefix ? static_cast<int32_t>(prefix->blocks.size()) : 0;
  // Restored blocks need fresh device blocks, like computed ones.
  const int32_t fresh =
      BlocksNeeded(static_cast<int32_t>(seq->table.size()) + device_blocks, num_tokens);
  // Taking a free cached block removes it from the free list too.
  int32_t prefix_free = 0;
  for (int32_t i = 0; i < device_blocks; ++i) prefix_free += pool_.is_free(prefix->blocks[i]);
  if (fresh > pool_.num_free() - prefix_free) return false;
  if (window_pool_) {
    int32_t window_free = 0;
    if (take_prefix) {
      for (int32_t b : prefix->window_blocks) window_free += window_pool_->is_free(b);
    }
    if (fresh > window_pool_->num_free() - window_free) return false;
  }
  if (take_prefix && window_pool_) {
    for (int32_t b : prefix->window_blocks) {
      window_pool_->Acquire(b);
      if (!seq->released) window_pool_->NoteReuse(b);
    }
    seq->window_table.assign(prefix->window_first, -1);
    seq->window_table.insert(seq->window_table.end(), prefix->window_blocks.begin(),
                             prefix->window_blocks.end());
    seq->window_released = prefix->window_first;
  }
  if (take_prefix) {
    for (int32_t b : prefix->blocks) {
      pool_.Acquire(b);
      if (!seq->released) pool_.NoteReuse(b);
    }
    seq->table = prefix->blocks;
    seq->num_cached_blocks = device_blocks;
    stats_.device_hit_blocks += device_blocks;
    // The fresh allocation may spill blocks into the host tier; the ones
    // about to be restored must not make room for them.
    for (int32_t slot : prefix->host_slots) host_->Pin(slot);
  }
  if (fresh > 0) {
    const bool ok = pool_.Allocate(fresh, &seq->table);
    KVMESH_CHECK(ok);
    if (window_pool_) {
      const bool window_ok = window_pool_->Allocate(fresh, &seq->window_table);
      KVMESH_CHECK(window_ok);
    }
  }
  if (take_prefix && !prefix->host_slots.empty()) RestoreFromHost(seq, prefix->host_slots);
  return true;
}

void KvCacheManager::RestoreFromHost(SequenceBlocks* seq, std::span<const int32_t> slots) {
  const auto t0 = std::chrono::steady_clock::now();
  bool failed = false;
  for (int32_t slot : slots) {
    host_->Unpin(slot);
    if (failed) continue;
    const int32_t i = seq->num_cached_blocks;
    const int32_t block = seq->table[i];
    if (!copier_->FromHost(host_->Bytes(slot), block).ok()) {
      // This block and those after it are computed instead.
      ++stats_.failed_copies;
      failed = true;
      continue;
    }
    pool_.Cache(block, seq->hashes[i],
                i == 0 ? std::nullopt : std::optional<BlockHash>(seq->hashes[i - 1]),
                host_->tokens(slot));
    host_->Erase(slot);  // the tiers are exclusive
    ++seq->num_cached_blocks;
    ++stats_.host_hit_blocks;
    stats_.restored_bytes += static_cast<int64_t>(host_->block_bytes());
  }
  stats_.restore_seconds += SecondsSince(t0);
}

bool KvCacheManager::Fork(const SequenceBlocks& parent, int32_t num_tokens, SequenceBlocks* child,
                          int32_t* copy_from, int32_t* copy_to) {
  const int32_t bs = block_size();
  const int32_t full = num_tokens / bs;
  const bool partial = num_tokens % bs != 0;
  KVMESH_CHECK(child->table.empty() &&
               static_cast<int32_t>(parent.table.size()) >= full + (partial ? 1 : 0));
  *copy_from = *copy_to = -1;
  // A block is not one id's pages with window pages: the child computes.
  if (window_pool_) return false;
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
  if (seq->num_cached_blocks >= full) return;
  HashBlocks(seq, tokens.first(static_cast<size_t>(full) * bs));
  while (seq->num_cached_blocks < full) {
    const int32_t i = seq->num_cached_blocks;
    // Another sequence may have cached the same block meanwhile: keep ours
    // (duplicates are legal; the hash is announced once).
    const std::optional<BlockHash> parent =
        i == 0 ? std::nullopt : std::optional<BlockHash>(seq->hashes[i - 1]);
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i) * bs, bs);
    pool_.Cache(seq->table[i], seq->hashes[i], parent, block_tokens);
    if (window_pool_ && seq->window_table[i] >= 0) {
      window_pool_->Cache(seq->window_table[i], seq->hashes[i], parent, block_tokens);
    }
    ++seq->num_cached_blocks;
  }
}

void KvCacheManager::Retain(const SequenceBlocks& seq, int32_t num_tokens, int64_t for_ms) {
  const int32_t blocks =
      std::min(seq.num_cached_blocks, num_tokens / static_cast<int32_t>(pool_.block_size()));
  const int64_t until = pool_.now_ms() + for_ms;
  for (int32_t i = 0; i < blocks; ++i) pool_.Retain(seq.table[i], until);
  if (!window_pool_) return;
  for (int32_t i = std::max(0, blocks - WindowSpan()); i < blocks; ++i) {
    if (seq.window_table[i] >= 0) {
      window_pool_->Retain(seq.window_table[i], until);
    } else if (const auto page = window_pool_->FindByHash(seq.hashes[i])) {
      window_pool_->Retain(*page, until);
    }
  }
}

void KvCacheManager::Release(SequenceBlocks* seq) {
  std::vector<int32_t> reversed(seq->table.rbegin(), seq->table.rend());
  pool_.Release(reversed);
  seq->table.clear();
  seq->num_cached_blocks = 0;
  seq->released = true;
  if (window_pool_) {
    std::vector<int32_t> pages;
    for (auto it = seq->window_table.rbegin(); it != seq->window_table.rend() && *it >= 0; ++it) {
      pages.push_back(*it);
    }
    window_pool_->Release(pages);
    seq->window_table.clear();
    seq->window_released = 0;
  }
}

void KvCacheManager::ReleaseOutsideWindow(SequenceBlocks* seq, int32_t next_pos,
                                          std::span<const RetainedPrefix> retained) {
  if (!window_pool_) return;
  const int32_t first_seen = std::max(0, next_pos - window_ + 1);
  const int32_t end =
      std::min(first_seen / block_size(), static_cast<int32_t>(seq->window_table.size()));
  std::vector<int32_t> pages;
  for (; seq->window_released < end; ++seq->window_released) {
    const int32_t i = seq->window_released;
    for (const RetainedPrefix& r : retained) {
      const int32_t blocks = r.tokens / block_size();
      if (i < blocks && i >= blocks - WindowSpan() && i < seq->num_cached_blocks) {
        window_pool_->Retain(seq->window_table[i], window_pool_->now_ms() + r.for_ms);
      }
    }
    pages.push_back(seq->window_table[i]);
    seq->window_table[i] = -1;
  }
  window_pool_->Release(pages);
}

int64_t KvCacheManager::ClearCache() {
  const int64_t device = pool_.ClearCache();
  if (window_pool_) window_pool_->ClearCache();
  return device + (host_ ? host_->Clear() : 0);
}

void KvCacheManager::EndStep() {
  if (host_) host_->EndStep();
  // Routers learn of blocks, not of their window pages.
  if (window_pool_) window_pool_->TakeEvents();
}

std::vector<BlockHash> KvCacheManager::SnapshotHashes(CacheTier tier) const {
  if (tier == CacheTier::kHost) return host_ ? host_->SnapshotHashes() : std::vector<BlockHash>{};
  return pool_.SnapshotHashes();
}

std::vector<KvEvent> KvCacheManager::TakeEvents() {
  std::vector<KvEvent> events = pool_.TakeEvents();
  if (host_) {
    std::vector<KvEvent> host = host_->TakeEvents();
    events.insert(events.end(), std::make_move_iterator(host.begin()),
                  std::make_move_iterator(host.end()));
  }
  return events;
}

}  // namespace kvmesh
