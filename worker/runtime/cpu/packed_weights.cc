#include "worker/runtime/cpu/packed_weights.h"

namespace kvmesh {

PackedWeights PackedWeights::Pack(const ModelWeights& weights, kernels::Isa isa, ThreadPool& pool) {
  PackedWeights packed;
  packed.layers.resize(weights.layers.size());
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const LayerWeights& l = weights.layers[i];
    PackedLayer& p = packed.layers[i];
    p.wq = PackedMatrix::Pack(l.wq, isa, pool);
    p.wk = PackedMatrix::Pack(l.wk, isa, pool);
    p.wv = PackedMatrix::Pack(l.wv, isa, pool);
    p.wo = PackedMatrix::Pack(l.wo, isa, pool);
    p.w_gate = PackedMatrix::Pack(l.w_gate, isa, pool);
    p.w_up = PackedMatrix::Pack(l.w_up, isa, pool);
    p.w_down = PackedMatrix::Pack(l.w_down, isa, pool);
  }
  packed.output = PackedMatrix::Pack(weights.output, isa, pool);
  return packed;
}

}  // namespace kvmesh
