// A layer's matrix or vector named by the graph's enums (graph_backend.h),
// for any backend's per-layer struct with the model's field names (wq, wk,
// wv, wo, w_gate, w_up, w_down; attn_norm, ffn_norm, bq, bk, bv, q_norm,
// k_norm, attn_post_norm, ffn_post_norm), so each backend keeps its own storage and one mapping.
#pragma once

#include "worker/runtime/graph_backend.h"

namespace kvmesh {

// Matrix::kOutput is not a layer's: callers handle it first.
template <typename Layer>
auto& LayerMatrix(Layer& l, Matrix m) {
  switch (m) {
    case Matrix::kQ:
      return l.wq;
    case Matrix::kK:
      return l.wk;
    case Matrix::kV:
      return l.wv;
    case Matrix::kO:
      return l.wo;
    case Matrix::kGate:
      return l.w_gate;
    case Matrix::kUp:
      return l.w_up;
    case Matrix::kDown:
    case Matrix::kOutput:
      break;
  }
  return l.w_down;
}

// Vector::kOutputNorm is not a layer's: callers handle it first.
template <typename Layer>
auto& LayerVector(Layer& l, Vector v) {
  switch (v) {
    case Vector::kAttnNorm:
      return l.attn_norm;
    case Vector::kFfnNorm:
      return l.ffn_norm;
    case Vector::kQBias:
      return l.bq;
    case Vector::kKBias:
      return l.bk;
    case Vector::kVBias:
      return l.bv;
    case Vector::kQNorm:
      return l.q_norm;
    case Vector::kAttnPostNorm:
      return l.attn_post_norm;
    case Vector::kFfnPostNorm:
      return l.ffn_post_norm;
    case Vector::kKNorm:
    case Vector::kOutputNorm:
      break;
  }
  return l.k_norm;
}

}  // namespace kvmesh
