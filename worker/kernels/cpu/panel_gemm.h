// Panel GEMM kernels: y = W·x for weights in the panel layout and activations
// in the planar layout (panel_layout.h), one implementation per weight type
// and ISA tier, chosen by GetPanelGemm.
//
// Contract shared by every kernel. For each panel p in [0, num_panels) and
// token t in [0, num_tokens):
//
//   y[t * y_stride + kPanelRows * p + r] = row r of panel p · token t
//
// for all 16 rows r (padded rows give 0). Each output is reduced along K in
// one fixed order that does not depend on num_tokens, num_panels or the
// thread that runs it; for the quantized types that order and every float
// operation are those of the type's scalar reference vec_dot, so outputs
// equal it bit for bit. Float-type kernels accumulate in float with one
// fused multiply-add per element (the reference sums in double), so they
// match it to rounding only, but are still batch invariant.
//
// Kernels are pure functions of their arguments, allocate nothing and may run
// concurrently on disjoint outputs.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tensor_type.h"
#include "worker/kernels/cpu/cpu_features.h"

namespace kvmesh::kernels {

struct PanelGemmArgs {
  const uint8_t* panels = nullptr;  // first panel to compute
  int64_t num_panels = 0;
  int64_t cols = 0;            // K: elements per row
  const uint8_t* x = nullptr;  // planar row of the first token
  size_t x_stride = 0;         // bytes between tokens' planar rows
  int64_t num_tokens = 0;
  float* y = nullptr;    // output of the first panel's first row, first token
  int64_t y_stride = 0;  // floats between tokens' outputs
};

using PanelGemmFn = void (*)(const PanelGemmArgs& args);

// The kernel for weights of `type` on tier `isa` (which must be supported by
// the host); nullptr when the type has no panel layout. A tier without its
// own kernel for a type gets the next narrower tier's.
PanelGemmFn GetPanelGemm(TensorType type, Isa isa);

// The scalar kernel, usable for every type with a panel layout: it unpacks
// each row and calls the type's reference vec_dot, so it is the executable
// definition of what the SIMD kernels must compute.
void PanelGemmReference(TensorType type, const PanelGemmArgs& args);

}  // namespace kvmesh::kernels
