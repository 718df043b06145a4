#include "worker/runtime/cpu/cpu_kv_pages.h"

#include <cstring>

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

void CpuKvPages::ReadBlock(int32_t block, std::vector<uint8_t>* out) const {
  out->resize(layout_.bytes_per_block());
  uint8_t* dst = out->data();
  for (int l = 0; l < layout_.n_layer; ++l) {
    std::memcpy(dst, KRow(l, block, 0, 0), k_block_bytes_);
    dst += k_block_bytes_;
    std::memcpy(dst, VRow(l, block, 0, 0), v_block_bytes_);
    dst += v_block_bytes_;
  }
}

void CpuKvPages::WriteBlock(int32_t block, const uint8_t* src) {
  for (int l = 0; l < layout_.n_layer; ++l) {
    std::memcpy(KRow(l, block, 0, 0), src, k_block_bytes_);
    src += k_block_bytes_;
    std::memcpy(VRow(l, block, 0, 0), src, v_block_bytes_);
    src += v_block_bytes_;
  }
}

}  // namespace kvmesh
