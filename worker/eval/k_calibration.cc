#include "worker/eval/k_calibration.h"

#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh {

StatusOr<KMeanAccumulator> KMeanAccumulator::Create(const KvLayout& layout) {
  RETURN_IF_ERROR(layout.Validate());
  if (layout.k_type != TensorType::kF32 && layout.k_type != TensorType::kF16) {
    return InvalidArgumentError(
        "K calibration reads K back from the cache, which must be f32 "
        "or f16 (got " +
        layout.TypeName() + ")");
  }
  if (layout.k_centered() || layout.k_rotated) {
    return InvalidArgumentError(
        "K calibration needs the cache to hold K as computed; turn off centering and rotation");
  }
  return KMeanAccumulator(layout);
}

KMeanAccumulator::KMeanAccumulator(const KvLayout& layout)
    : layout_(layout),
      sums_(static_cast<size_t>(layout.n_layer) * layout.n_head_kv * layout.head_dim, 0.0),
      sum_squares_(static_cast<size_t>(layout.n_layer) * layout.n_head_kv, 0.0),
      row_(layout.head_dim) {}

Status KMeanAccumulator::AddSequence(const Executor& executor, std::span<const int32_t> block_table,
                                     int n_tokens) {
  const KvLayout& exec_layout = executor.kv_layout();
  if (exec_layout.k_type != layout_.k_type || exec_layout.n_layer != layout_.n_layer ||
      exec_layout.n_head_kv != layout_.n_head_kv || exec_layout.head_dim != layout_.head_dim ||
      exec_layout.block_size != layout_.block_size) {
    return InvalidArgumentError("the executor's KV layout (" + exec_layout.ToString() +
                                ") is not the calibration layout (" + layout_.ToString() + ")");
  }
  const int bs = layout_.block_size;
  if (static_cast<int64_t>(block_table.size()) * bs < n_tokens) {
    return InvalidArgumentError("block table too short for " + std::to_string(n_tokens) +
                                " tokens");
  }
  const kernels::TypeTraits* traits = kernels::GetTypeTraits(layout_.k_type);
  const size_t k_row = layout_.k_row_bytes();
  const size_t layer_stride = layout_.k_block_bytes() + layout_.v_block_bytes();
  const int head_dim = layout_.head_dim;
  for (int pos = 0; pos < n_tokens; pos += bs) {
    RETURN_IF_ERROR(executor.ReadBlock(block_table[pos / bs], &block_bytes_));
    const int slots = std::min(bs, n_tokens - pos);
    for (int layer = 0; layer < layout_.n_layer; ++layer) {
      const uint8_t* k_block = block_bytes_.data() + layer * layer_stride;
      for (int slot = 0; slot < slots; ++slot) {
        for (int head = 0; head < layout_.n_head_kv; ++head) {
          const size_t row_index = static_cast<size_t>(slot) * layout_.n_head_kv + head;
          traits->to_float(k_block + row_index * k_row, row_.data(), head_dim);
          const size_t lh = static_cast<size_t>(layer) * layout_.n_head_kv + head;
          double* sums = sums_.data() + lh * head_dim;
          double energy = 0.0;
          for (int d = 0; d < head_dim; ++d) {
            sums[d] += row_[d];
            energy += static_cast<double>(row_[d]) * row_[d];
          }
          sum_squares_[lh] += energy;
        }
      }
    }
  }
  n_tokens_ += static_cast<uint64_t>(n_tokens);
  return Status::Ok();
}

std::vector<float> KMeanAccumulator::Means() const {
  std::vector<float> means(sums_.size(), 0.0f);
  if (n_tokens_ == 0) return means;
  for (size_t i = 0; i < sums_.size(); ++i) {
    means[i] = static_cast<float>(sums_[i] / static_cast<double>(n_tokens_));
  }
  return means;
}

std::vector<double> KMeanAccumulator::MeanEnergyShare() const {
  std::vector<double> share(layout_.n_layer, 0.0);
  if (n_tokens_ == 0) return share;
  const double n = static_cast<double>(n_tokens_);
  const int head_dim = layout_.head_dim;
  for (int layer = 0; layer < layout_.n_layer; ++layer) {
    for (int head = 0; head < layout_.n_head_kv; ++head) {
      const size_t lh = static_cast<size_t>(layer) * layout_.n_head_kv + head;
      double mean_energy = 0.0;
      for (int d = 0; d < head_dim; ++d) {
        const double m = sums_[lh * head_dim + d] / n;
        mean_energy += m * m;
      }
      const double total = sum_squares_[lh] / n;
      share[layer] += total > 0.0 ? mean_energy / total : 0.0;
    }
    share[layer] /= layout_.n_head_kv;
  }
  return share;
}

std::shared_ptr<const KvBias> KMeanAccumulator::Finish(const std::string& model_identity,
                                                       const std::string& model_name) const {
  return std::make_shared<const KvBias>(model_identity, model_name, layout_.n_layer,
                                        layout_.n_head_kv, layout_.head_dim, n_tokens_, Means());
}

}  // namespace kvmesh
