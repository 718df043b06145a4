#include "worker/kv/kv_layout.h"

namespace kvmesh {
namespace {

size_t RowBytesOrZero(TensorType type, int n) {
  auto bytes = RowBytes(type, static_cast<uint64_t>(n));
  return bytes ? static_cast<size_t>(*bytes) : 0;
}

Status CheckType(const char* which, TensorType type, int head_dim) {
  auto info = LookupTensorType(static_cast<uint32_t>(type));
  if (!info) return InvalidArgumentError(std::string(which) + " cache type is unknown");
  if (head_dim % static_cast<int>(info->block_size) != 0) {
    return InvalidArgumentError(std::string(which) + " cache type " + std::string(info->name) +
                                " stores blocks of " + std::to_string(info->block_size) +
                                " values, which does not divide the head size " +
                                std::to_string(head_dim) + "; use f16, bf16 or f32 for this model");
  }
  return Status::Ok();
}

}  // namespace

size_t KvLayout::k_row_bytes() const { return RowBytesOrZero(k_type, head_dim); }
size_t KvLayout::v_row_bytes() const { return RowBytesOrZero(v_type, head_dim); }

Status KvLayout::Validate() const {
  if (n_layer <= 0 || n_head_kv <= 0 || head_dim <= 0) {
    return InvalidArgumentError("KV layout needs positive layer, head and head-size counts");
  }
  if (block_size <= 0 || block_size > 1024) {
    return InvalidArgumentError("KV block size " + std::to_string(block_size) +
                                " is outside 1..1024");
  }
  RETURN_IF_ERROR(CheckType("K", k_type, head_dim));
  RETURN_IF_ERROR(CheckType("V", v_type, head_dim));
  return Status::Ok();
}

std::string KvLayout::ToString() const {
  return "layers=" + std::to_string(n_layer) + " kv_heads=" + std::to_string(n_head_kv) +
         " head_dim=" + std::to_string(head_dim) + " block=" + std::to_string(block_size) +
         " k=" + TensorTypeName(k_type) + " v=" + TensorTypeName(v_type);
}

}  // namespace kvmesh
