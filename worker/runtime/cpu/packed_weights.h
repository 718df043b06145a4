// PackedWeights: every weight matrix of a model repacked into panels for the
// CPU kernels of one ISA tier (see cpu_matmul.h). Built once per executor -
// the repacked copy is as large as the matrices themselves - and immutable
// afterwards. The token embedding is not repacked (rows are looked up one at
// a time); a tied output matrix is.
//
// All matrices live in one buffer, in the order a forward pass reads them
// (per layer q, k, v, o, gate, up, down - or the router, then each expert's
// gate, up and down; then the output matrix): one
// unbroken stream of weights per token, backed by huge pages throughout, so
// the prefetchers run on from one matrix into the next instead of starting
// cold at each.
#pragma once

#include <vector>

#include "common/thread_pool.h"
#include "worker/kernels/cpu/cpu_features.h"
#include "worker/model/model_weights.h"
#include "worker/runtime/cpu/cpu_matmul.h"

namespace kvmesh {

struct PackedLayer {
  PackedMatrix wq, wk, wv, wo;
  PackedMatrix w_gate, w_up, w_down;
  // Mixture of experts: the router and each expert's matrices.
  PackedMatrix w_gate_inp;
  PackedMatrix gate_shexp, up_shexp, down_shexp;  // a shared expert, if any
  std::vector<PackedMatrix> gate_exps, up_exps, down_exps;
};

struct PackedWeights {
  std::vector<PackedLayer> layers;
  PackedMatrix output;
  AlignedBuffer storage;  // every matrix's panels

  // Repacks every matrix of `weights` (an output matrix of no rows is left
  // out: a device of a split that computes no logits), splitting the work
  // over `pool`.
  static PackedWeights Pack(const ModelWeights& weights, kernels::Isa isa, ThreadPool& pool);
};

}  // namespace kvmesh
