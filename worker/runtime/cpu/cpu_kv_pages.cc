#include "worker/runtime/cpu/cpu_kv_pages.h"

#include <cstring>

namespace kvmesh {

CpuKvPages::CpuKvPages(const KvLayout& layout, int64_t num_blocks)
    : layout_(layout), num_blocks_(num_blocks) {
  storage_.assign(LayerBytes() * layout_.n_layer, 0);
}

void CpuKvPages::ReadBlock(int32_t block, std::vector<uint8_t>* out) const {
  out->resize(layout_.bytes_per_block());
  uint8_t* dst = out->data();
  for (int l = 0; l < layout_.n_layer; ++l) {
    std::memcpy(dst, KRow(l, block, 0, 0), layout_.k_block_bytes());
    dst += layout_.k_block_bytes();
    std::memcpy(dst, VRow(l, block, 0, 0), layout_.v_block_bytes());
    dst += layout_.v_block_bytes();
  }
}

void CpuKvPages::WriteBlock(int32_t block, const uint8_t* src) {
  for (int l = 0; l < layout_.n_layer; ++l) {
    std::memcpy(KRow(l, block, 0, 0), src, layout_.k_block_bytes());
    src += layout_.k_block_bytes();
    std::memcpy(VRow(l, block, 0, 0), src, layout_.v_block_bytes());
    src += layout_.v_block_bytes();
  }
}

}  // namespace kvmesh
