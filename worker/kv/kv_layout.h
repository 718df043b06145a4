// KvLayout: the geometry of the paged KV cache — how many layers, heads and
// dimensions a page holds, in which storage type, and how pages are laid out
// in memory. Shared by the cache manager (which only counts blocks) and the
// executors (which own the page memory).
//
// A block holds `block_size` consecutive token positions of one sequence for
// every layer. Per layer, the K pages form one array
//   [num_blocks][block_size][n_head_kv] rows of head_dim elements of k_type
// (V likewise), so a (block, slot, head) row is found by arithmetic alone, and
// each device of a layer split can hold just its own layers' arrays.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "common/status.h"
#include "common/tensor_type.h"

namespace kvmesh {

inline constexpr int kDefaultBlockSize = 16;

struct KvLayout {
  int n_layer = 0;
  int n_head_kv = 0;
  int head_dim = 0;
  int block_size = kDefaultBlockSize;
  TensorType k_type = TensorType::kF16;
  TensorType v_type = TensorType::kF16;

  size_t k_row_bytes() const;  // one head of one token
  size_t v_row_bytes() const;
  size_t k_block_bytes() const { return k_row_bytes() * n_head_kv * block_size; }
  size_t v_block_bytes() const { return v_row_bytes() * n_head_kv * block_size; }
  // K and V bytes of one token across all layers.
  size_t bytes_per_token() const {
    return (k_row_bytes() + v_row_bytes()) * static_cast<size_t>(n_head_kv) * n_layer;
  }
  size_t bytes_per_block() const { return bytes_per_token() * block_size; }

  // Checks the storage types can hold rows of head_dim (e.g. 32-element
  // quant blocks need head_dim % 32 == 0) and the sizes are positive.
  Status Validate() const;
  std::string ToString() const;
};

}  // namespace kvmesh
