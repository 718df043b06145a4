#include "worker/kv/kv_layout.h"

#include <cctype>

#include "worker/kv/kv_bias.h"
#include "worker/kv/kv_transform.h"

namespace kvmesh {
namespace {

size_t RowBytesOrZero(TensorType type, int n) {
  auto bytes = RowBytes(type, static_cast<uint64_t>(n));
  return bytes ? static_cast<size_t>(*bytes) : 0;
}

std::string LowerName(TensorType type) {
  std::string name = TensorTypeName(type);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

Status CheckType(const char* which, TensorType type, int head_dim) {
  auto info = LookupTensorType(static_cast<uint32_t>(type));
  if (!info || !IsKvStorageType(type)) {
    std::string message = std::string(which) + " cache type ";
    message += info ? LowerName(type) : TensorTypeName(type);
    message += " is not a KV storage type; use f32, f16, bf16, q8_0, q4_0 or q3_nl";
    return InvalidArgumentError(std::move(message));
  }
  if (head_dim % static_cast<int>(info->block_size) != 0) {
    std::string message = std::string(which) + " cache type " + LowerName(type);
    message += " stores blocks of " + std::to_string(info->block_size);
    message += " values, which does not divide the head size " + std::to_string(head_dim);
    message += "; use f16, bf16 or f32 for this model";
    return InvalidArgumentError(std::move(message));
  }
  return Status::Ok();
}

}  // namespace

bool IsKvStorageType(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ3_NL:
      return true;
    default:
      return false;
  }
}

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
  if ((k_rotated || v_rotated) && !IsPowerOfTwo(head_dim)) {
    return InvalidArgumentError(std::string("the Hadamard rotation of ") + (k_rotated ? "K" : "V") +
                                " needs a power-of-two head size, but this model's head size is " +
                                std::to_string(head_dim) + "; run without --kv-rotate" +
                                (k_rotated ? "" : "-v"));
  }
  if (k_bias != nullptr && (k_bias->n_layer() != n_layer || k_bias->n_head_kv() != n_head_kv ||
                            k_bias->head_dim() != head_dim)) {
    std::string message = "the K bias table has " + std::to_string(k_bias->n_layer());
    message += " layers x " + std::to_string(k_bias->n_head_kv()) + " KV heads x ";
    message += std::to_string(k_bias->head_dim()) + " channels but the KV layout has ";
    message += std::to_string(n_layer) + " x " + std::to_string(n_head_kv) + " x ";
    message += std::to_string(head_dim);
    return InvalidArgumentError(std::move(message));
  }
  return Status::Ok();
}

std::string KvLayout::TypeName() const {
  std::string k = LowerName(k_type);
  if (k_centered()) k += "+center";
  if (k_rotated) k += "+rotate";
  std::string v = LowerName(v_type);
  if (v_rotated) v += "+rotate";
  if (k == v) return k;
  return "k=" + k + ",v=" + v;
}

std::string KvLayout::ToString() const {
  return "layers=" + std::to_string(n_layer) + " kv_heads=" + std::to_string(n_head_kv) +
         " head_dim=" + std::to_string(head_dim) + " block=" + std::to_string(block_size) +
         " type=" + TypeName() + (rounding == KvRounding::kReference ? " rounding=reference" : "");
}

}  // namespace kvmesh
