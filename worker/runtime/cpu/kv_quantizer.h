// How K and V rows are encoded when they are written into their pages.
//
// Pages are written once and read many times, so the writer may spend more
// time than a weight-style quantizer to make each row as accurate as its
// format allows. The format never changes: a q4_0 page written here is read
// by any q4_0 reader.
//
//  - KvRounding::kReference: the type's reference from_float (ggml's rounding;
//    for q4_0 the block's largest-magnitude value maps exactly to -8).
//  - KvRounding::kMinError (q4_0 only; other types use the reference): per
//    32-value block, the f16 scale is chosen among candidate scales, each
//    refined by least squares for the levels it produces, to minimise the
//    block's squared error as stored (with the f16-rounded scale). Never worse
//    than the reference scale's error, and in practice about a quarter lower.
//
// Pure functions, safe from any thread.
#pragma once

#include <cstdint>

#include "common/tensor_type.h"
#include "worker/kv/kv_layout.h"

namespace kvmesh {

using KvEncodeFn = void (*)(const float* src, void* dst, int64_t n);

// The encoder for rows of `type` (a KV storage type) under `rounding`.
KvEncodeFn GetKvEncoder(TensorType type, KvRounding rounding);

// q4_0 with the least squared error per block (see above). n is a multiple
// of 32.
void QuantizeRowQ4_0MinError(const float* src, void* dst, int64_t n);

// Σ (x - dequantized)² of one q4_0-encoded row; for tests and tools.
double Q4_0SquaredError(const float* src, const void* encoded, int64_t n);

}  // namespace kvmesh
