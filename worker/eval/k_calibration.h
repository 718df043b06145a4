// K-mean calibration: the per-(layer, KV head, channel) mean of post-RoPE K
// over a text, which becomes the KvBias that centering subtracts (see
// worker/kv/kv_bias.h, and `kvmesh kv-calibrate`).
//
// K is read back from the pages an executor wrote, through the Executor
// interface (ReadBlock), so calibration measures exactly what the cache would
// store, on any executor, without hooks in the forward pass. The pages must
// hold untransformed K in a float type (f32, or f16 with its rounding).
//
// Not thread-safe; one accumulator per calibration run.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/kv/kv_bias.h"
#include "worker/runtime/executor.h"

namespace kvmesh {

class KMeanAccumulator {
 public:
  // Fails unless `layout` stores plain K as f32 or f16.
  static StatusOr<KMeanAccumulator> Create(const KvLayout& layout);

  // Adds positions [0, n_tokens) of the sequence whose blocks `block_table`
  // lists, reading them from `executor` (which must use this layout).
  Status AddSequence(const Executor& executor, std::span<const int32_t> block_table, int n_tokens);

  uint64_t n_tokens() const { return n_tokens_; }
  // Mean of (layer, head, channel) so far.
  std::vector<float> Means() const;
  // Per layer: the share of K's mean square that the mean accounts for,
  // |mean|² / mean |k|² averaged over heads; how much centering can remove.
  std::vector<double> MeanEnergyShare() const;
  // The bias table for `model_identity` / `model_name`.
  std::shared_ptr<const KvBias> Finish(const std::string& model_identity,
                                       const std::string& model_name) const;

 private:
  explicit KMeanAccumulator(const KvLayout& layout);

  KvLayout layout_;
  std::vector<double> sums_;         // [layer][head][channel]
  std::vector<double> sum_squares_;  // [layer][head]: Σ |k|²
  uint64_t n_tokens_ = 0;
  std::vector<uint8_t> block_bytes_;  // scratch
  std::vector<float> row_;            // scratch
};

}  // namespace kvmesh
