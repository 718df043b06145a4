// CpuKvPages: the KV page memory of a CPU executor, laid out as KvLayout
// describes (per layer: K pages, then V pages). Owned by the executor and
// touched only from its thread (and its ThreadPool during a step).
#pragma once

#include <cstdint>
#include <vector>

#include "worker/kv/kv_layout.h"

namespace kvmesh {

class CpuKvPages {
 public:
  CpuKvPages(const KvLayout& layout, int64_t num_blocks);

  const KvLayout& layout() const { return layout_; }
  int64_t num_blocks() const { return num_blocks_; }
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

  // One block's bytes across every layer, K then V per layer.
  void ReadBlock(int32_t block, std::vector<uint8_t>* out) const;
  void WriteBlock(int32_t block, const uint8_t* bytes);

 private:
  size_t LayerBytes() const {
    return (layout_.k_block_bytes() + layout_.v_block_bytes()) * static_cast<size_t>(num_blocks_);
  }
  size_t KOffset(int layer, int32_t block, int slot, int head) const {
    return layer * LayerBytes() + block * layout_.k_block_bytes() +
           (static_cast<size_t>(slot) * layout_.n_head_kv + head) * layout_.k_row_bytes();
  }
  size_t VOffset(int layer, int32_t block, int slot, int head) const {
    return layer * LayerBytes() + num_blocks_ * layout_.k_block_bytes() +
           block * layout_.v_block_bytes() +
           (static_cast<size_t>(slot) * layout_.n_head_kv + head) * layout_.v_row_bytes();
  }

  KvLayout layout_;
  int64_t num_blocks_;
  std::vector<uint8_t> storage_;
};

}  // namespace kvmesh
