// Matrix products on the CPU over weights of any supported type.
//
// y[t][r] = W.row(r) · x[t] for every token row t, where x is first converted
// to W's vec_dot_type (once per call) and each product is one vec_dot call.
// Because every output element is computed by the same vec_dot on the same
// bytes whatever the number of rows, a row's result does not depend on what
// else is in the batch (batch invariance), nor on the thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "common/thread_pool.h"
#include "worker/model/model_weights.h"

namespace kvmesh {

// Converted activations, reusable across matrices that share an input and a
// vec_dot_type (Q, K and V; gate and up).
struct QuantizedRows {
  TensorType type = TensorType::kF32;
  int64_t cols = 0;
  int64_t rows = 0;
  size_t row_bytes = 0;
  std::vector<uint8_t> bytes;

  const uint8_t* Row(int64_t r) const { return bytes.data() + static_cast<size_t>(r) * row_bytes; }
};

// Converts `rows` rows of `cols` floats to `type` (a vec_dot_type).
void QuantizeRows(const float* x, int64_t rows, int64_t cols, TensorType type, ThreadPool& pool,
                  QuantizedRows* out);

// y (rows x w.rows) = x (rows x w.cols) · Wᵀ, with x already converted to
// w.traits->vec_dot_type.
void MatMulQuantized(const WeightMatrix& w, const QuantizedRows& x, float* y, ThreadPool& pool);

// Convenience: converts x and multiplies.
void MatMul(const WeightMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool,
            QuantizedRows* scratch);

}  // namespace kvmesh
