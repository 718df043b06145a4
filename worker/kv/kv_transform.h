// The transforms a KvLayout may apply around the cache, on float vectors of
// one head (head_dim values):
//
//  - K centering: k' = k - m, with m the calibrated mean of the (layer, KV
//    head) (worker/kv/kv_bias.h). Each score q·k' = q·k - q·m moves by the
//    same amount for all positions of one query, and softmax ignores that.
//  - K rotation: k'' = H k', q' = H q with H the orthonormal Hadamard matrix
//    of size head_dim (Sylvester order, entries ±1/√head_dim). HᵀH = I, so
//    q'·k'' = q·k'. A channel that is an outlier in k' is spread evenly over
//    all of k'', so the 32-value blocks of q4_0 see a flatter distribution.
//  - V rotation: v' = H v is stored; attention then yields Σ w·v' = H Σ w·v,
//    and since H is its own inverse, one more H on each head's output
//    restores it.
//
// All are exact in real arithmetic; in floats they move results by a few
// ulps, far below the quantization error they remove. Pure functions, safe
// from any thread.
#pragma once

#include "worker/kv/kv_layout.h"

namespace kvmesh {

bool IsPowerOfTwo(int n);

// In place: x ← H x for the orthonormal Hadamard matrix H of size n, by the
// fast Walsh–Hadamard transform (n log n additions). n must be a power of two
// (CHECKed); H is symmetric and its own inverse.
void HadamardTransform(float* x, int n);

// K of (layer, KV head) before it is stored: centering, then rotation.
void TransformKey(const KvLayout& layout, int layer, int kv_head, float* k);
// One query head before it meets the stored K: rotation only (centering
// needs nothing on the query side).
void TransformQuery(const KvLayout& layout, float* q);
// V of one KV head before it is stored.
void TransformValue(const KvLayout& layout, float* v);
// One query head's attention output, back from V's stored basis.
void RestoreAttentionOutput(const KvLayout& layout, float* out);

}  // namespace kvmesh
