#include "worker/runtime/cpu/cpu_kv_pages.h"

#include "common/check.h"

namespace kvmesh {

CpuKvPages::CpuKvPages(const KvLayout& layout, int64_t num_blocks, std::vector<bool> windowed)
    : layout_(layout),
      num_blocks_(num_blocks),
      n_head_kv_(static_cast<size_t>(layout.n_head_kv)),
      k_row_bytes_(layout.k_row_bytes()),
      v_row_bytes_(layout.v_row_bytes()),
      k_block_bytes_(layout.k_block_bytes()),
      v_block_bytes_(layout.v_block_bytes()),
      windowed_(std::move(windowed)) {
  KVMESH_CHECK(windowed_.empty() || static_cast<int>(windowed_.size()) == layout.n_layer);
  if (layout.window_blocks == 0) windowed_.clear();
  size_t total = 0;
  for (int layer = 0; layer < layout_.n_layer; ++layer) {
    const size_t blocks =
        static_cast<size_t>(this->windowed(layer) ? layout.window_blocks : num_blocks);
    layer_base_.push_back(total);
    v_base_.push_back(blocks * k_block_bytes_);
    total += (k_block_bytes_ + v_block_bytes_) * blocks;
  }
  storage_.assign(total, 0);
}

}  // namespace kvmesh
