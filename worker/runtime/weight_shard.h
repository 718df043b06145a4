// WeightShard: the weights one device of a ParallelPlan holds, as views into
// the model's matrices where a slice is a run of whole rows (Q, K, V, gate,
// up, the output head) and as owned copies where it cuts every row (the
// columns of the attention output and down matrices in a tensor split).
//
// Layers are re-indexed from the device's first layer. Vectors follow their
// matrix: the Q/K/V biases keep the device's heads; norms stay whole. The
// model's weights must outlive the shard; a shard is immutable once built.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "worker/model/model_config.h"
#include "worker/model/model_weights.h"
#include "worker/runtime/parallel_plan.h"

namespace kvmesh {

struct WeightShard {
  ModelWeights weights;  // layers [0, shard.num_layers()), output rows of the shard's vocabulary
  std::vector<std::unique_ptr<uint8_t[]>> storage;  // the column slices' bytes

  // CHECKs that column cuts fall on whole blocks (ParallelPlan::Make ensures it).
  static WeightShard Make(const ModelWeights& weights, const ModelConfig& config,
                          const DeviceShard& shard);
};

// Rows [begin, end) of `m` as a view.
WeightMatrix SliceRows(const WeightMatrix& m, int64_t begin, int64_t end);

// Columns [begin, end) of `m`, copied into `*storage` (whole blocks only).
WeightMatrix SliceColumns(const WeightMatrix& m, int64_t begin, int64_t end,
                          std::unique_ptr<uint8_t[]>* storage);

}  // namespace kvmesh
