#include "worker/runtime/cpu/cpu_kv_pages.h"

namespace kvmesh {

CpuKvPages::CpuKvPages(const KvLayout& layout, int64_t num_blocks)
    : layout_(layout),
      num_blocks_(num_blocks),
      n_head_kv_(static_cast<size_t>(layout.n_head_kv)),
      k_row_bytes_(layout.k_row_bytes()),
      v_row_bytes_(layout.v_row_bytes()),
      k_block_bytes_(layout.k_block_bytes()),
      v_block_bytes_(layout.v_block_bytes()),
      v_base_(static_cast<size_t>(num_blocks) * k_block_bytes_),
      layer_bytes_((k_block_bytes_ + v_block_bytes_) * static_cast<size_t>(num_blocks)) {
  storage_.assign(layer_bytes_ * layout_.n_layer, 0);
}

}  // namespace kvmesh
