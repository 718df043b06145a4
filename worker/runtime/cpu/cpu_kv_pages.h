// CpuKvPages: the KV page memory of a CPU executor, laid out as KvLayout
// describes (per layer: K pages, then V pages). Owned by the executor and
// touched only from its thread (and its ThreadPool during a step).
//
// With window pages (KvLayout::window_blocks > 0), the layers flagged in
// `windowed` hold window_blocks blocks each, addressed by a sequence's
// window table; the others hold num_blocks.
#pragma once

#include <cstdint>
#include <vector>

#include "worker/kv/kv_layout.h"

namespace kvmesh {

class CpuKvPages {
 public:
  // `windowed` has one flag per layer of `layout`, or is empty (no layer
  // keeps window pages).
  CpuKvPages(const KvLayout& layout, int64_t num_blocks, std::vector<bool> windowed = {});

  const KvLayout& layout() const { return layout_; }
  int64_t num_blocks() const { return num_blocks_; }
  // Whether `layer` keeps window pages (its blocks are window-table ids).
  bool windowed(int layer) const { return !windowed_.empty() && windowed_[layer]; }
  size_t total_bytes() const { return storage_.size(); }

  uint8_t* KRow(int layer, int32_t block, int slot, int head) {
    return storage_.data() + KOffset(layer, block, slot, head);
  }
  const uint8_t* KRow(int layer, int32_t block, int slot, int head) const {
    return storage_.data() + KOffset(layer, block, slot, head);
  }
  uint8_t* VRow(int layer, int32_t block, int slot, int head) {
    return storage_.data() + VOffset(layer, block, slot, head);
  }
  const uint8_t* VRow(int layer, int32_t block, int slot, int head) const {
    return storage_.data() + VOffset(layer, block, slot, head);
  }

 private:
  // Row and block sizes are fixed by the layout; they are computed once here
  // rather than per row (attention asks for a row address per token and head).
  size_t KOffset(int layer, int32_t block, int slot, int head) const {
    return layer_base_[layer] + block * k_block_bytes_ +
           (static_cast<size_t>(slot) * n_head_kv_ + head) * k_row_bytes_;
  }
  size_t VOffset(int layer, int32_t block, int slot, int head) const {
    return layer_base_[layer] + v_base_[layer] + block * v_block_bytes_ +
           (static_cast<size_t>(slot) * n_head_kv_ + head) * v_row_bytes_;
  }

  KvLayout layout_;
  int64_t num_blocks_;
  size_t n_head_kv_;
  size_t k_row_bytes_;
  size_t v_row_bytes_;
  size_t k_block_bytes_;
  size_t v_block_bytes_;
  std::vector<bool> windowed_;
  std::vector<size_t> layer_base_;  // offset of each layer's K pages
  std::vector<size_t> v_base_;      // offset of each layer's V pages within the layer
  std::vector<uint8_t> storage_;
};

}  // namespace kvmesh
