// KvBias: the per-(layer, KV head, channel) mean of post-RoPE K, measured on
// a calibration text by `kvmesh kv-calibrate` and subtracted from K before K is
// stored (KvLayout::k_bias). Softmax ignores a constant added to a whole row
// of scores, and q·(k - m) = q·k - q·m shifts every score of one query by the
// same q·m, so centering changes no attention weight in exact arithmetic; it
// only removes the common offset a 4-bit quantizer would otherwise spend its
// range on.
//
// File format (little-endian; version 1). The table is tied to one model: the
// identity is Model::identity(), so a table from other weights is refused.
//
//   offset  size  field
//   0       8     magic "KVMKBIAS"
//   8       4     u32 version (1)
//   12      4     u32 n_layer
//   16      4     u32 n_head_kv
//   20      4     u32 head_dim
//   24      8     u64 calibration tokens (positions averaged per layer)
//   32      4     u32 length of the model identity, then its bytes
//   ..      4     u32 length of the model name (for messages), then its bytes
//   ..            f32 mean[n_layer][n_head_kv][head_dim]
//   (end of file; nothing may follow)
//
// Immutable once built; safe to share between threads.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"

namespace kvmesh {

class KvBias {
 public:
  static constexpr char kMagic[9] = "KVMKBIAS";
  static constexpr uint32_t kVersion = 1;

  // `mean` holds n_layer * n_head_kv * head_dim values, layer-major, then KV
  // head, then channel. CHECKs the size.
  KvBias(std::string model_identity, std::string model_name, int n_layer, int n_head_kv,
         int head_dim, uint64_t n_tokens, std::vector<float> mean);

  // Reads a file written by Save(). Errors name the file and what is wrong.
  static StatusOr<std::shared_ptr<const KvBias>> Load(const std::string& path);
  // Parses the bytes of a bias file; `source` names it in errors.
  static StatusOr<std::shared_ptr<const KvBias>> Parse(std::span<const uint8_t> bytes,
                                                       const std::string& source);
  std::vector<uint8_t> Serialize() const;
  // Writes the file atomically (a temporary beside it, then rename).
  Status Save(const std::string& path) const;

  // Fails, naming both models, unless the table was measured on the model
  // with this identity and shape.
  Status CheckModel(const std::string& model_identity, const std::string& model_name, int n_layer,
                    int n_head_kv, int head_dim) const;

  const std::string& model_identity() const { return model_identity_; }
  const std::string& model_name() const { return model_name_; }
  int n_layer() const { return n_layer_; }
  int n_head_kv() const { return n_head_kv_; }
  int head_dim() const { return head_dim_; }
  uint64_t n_tokens() const { return n_tokens_; }
  const std::vector<float>& mean() const { return mean_; }
  // The head_dim means of one (layer, KV head).
  const float* Row(int layer, int head) const {
    return mean_.data() + (static_cast<size_t>(layer) * n_head_kv_ + head) * head_dim_;
  }

 private:
  std::string model_identity_;
  std::string model_name_;
  int n_layer_;
  int n_head_kv_;
  int head_dim_;
  uint64_t n_tokens_;
  std::vector<float> mean_;
};

}  // namespace kvmesh
