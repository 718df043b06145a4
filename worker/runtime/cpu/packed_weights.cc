#include "worker/runtime/cpu/packed_weights.h"

#include <utility>
#include <vector>

namespace kvmesh {

PackedWeights PackedWeights::Pack(const ModelWeights& weights, kernels::Isa isa, ThreadPool& pool) {
  // Forward-pass order; each matrix starts on a cache line.
  std::vector<std::pair<const WeightMatrix*, PackedMatrix*>> order;
  PackedWeights packed;
  packed.layers.resize(weights.layers.size());
  for (size_t i = 0; i < weights.layers.size(); ++i) {
    const LayerWeights& l = weights.layers[i];
    PackedLayer& p = packed.layers[i];
    order.insert(order.end(), {{&l.wq, &p.wq}, {&l.wk, &p.wk}, {&l.wv, &p.wv}, {&l.wo, &p.wo}});
    if (l.gate_exps.empty()) {
      order.insert(order.end(),
                   {{&l.w_gate, &p.w_gate}, {&l.w_up, &p.w_up}, {&l.w_down, &p.w_down}});
      continue;
    }
    order.emplace_back(&l.w_gate_inp, &p.w_gate_inp);
    if (l.gate_shexp.rows > 0) {
      order.insert(order.end(), {{&l.gate_shexp, &p.gate_shexp},
                                 {&l.up_shexp, &p.up_shexp},
                                 {&l.down_shexp, &p.down_shexp}});
    }
    const size_t experts = l.gate_exps.size();
    p.gate_exps.resize(experts);
    p.up_exps.resize(experts);
    p.down_exps.resize(experts);
    for (size_t e = 0; e < experts; ++e) {
      order.insert(order.end(), {{&l.gate_exps[e], &p.gate_exps[e]},
                                 {&l.up_exps[e], &p.up_exps[e]},
                                 {&l.down_exps[e], &p.down_exps[e]}});
    }
  }
  if (weights.output.rows > 0) order.emplace_back(&weights.output, &packed.output);
  auto aligned = [](size_t bytes) { return (bytes + 63) / 64 * 64; };
  size_t total = 0;
  for (const auto& [w, p] : order) total += aligned(PackedMatrix::PackedBytes(*w));
  packed.storage.Resize(total);
  size_t offset = 0;
  for (const auto& [w, p] : order) {
    *p = PackedMatrix::PackInto(*w, isa, pool, packed.storage.data() + offset);
    offset += aligned(PackedMatrix::PackedBytes(*w));
  }
  return packed;
}

}  // namespace kvmesh
