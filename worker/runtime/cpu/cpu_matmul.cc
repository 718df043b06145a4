#include "worker/runtime/cpu/cpu_matmul.h"

#include <algorithm>

#include "common/check.h"

namespace kvmesh {

void QuantizeRows(const float* x, int64_t rows, int64_t cols, TensorType type, ThreadPool& pool,
                  QuantizedRows* out) {
  const kernels::TypeTraits* traits = kernels::GetTypeTraits(type);
  KVMESH_CHECK(traits != nullptr && traits->from_float != nullptr);
  out->type = type;
  out->cols = cols;
  out->rows = rows;
  out->row_bytes = kernels::RowSizeBytes(*traits, cols);
  out->bytes.resize(out->row_bytes * rows);
  pool.ParallelFor(rows, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      traits->from_float(x + r * cols, out->bytes.data() + r * out->row_bytes, cols);
    }
  });
}

void MatMulQuantized(const WeightMatrix& w, const QuantizedRows& x, float* y, ThreadPool& pool) {
  KVMESH_CHECK(x.type == w.traits->vec_dot_type && x.cols == w.cols);
  const kernels::VecDotFn dot = w.traits->vec_dot;
  const int64_t n_tokens = x.rows;
  const int64_t n_out = w.rows;
  // Split over output rows so each weight row is read once for all tokens.
  pool.ParallelFor(
      n_out,
      [&](int64_t begin, int64_t end) {
        for (int64_t r = begin; r < end; ++r) {
          const uint8_t* wrow = w.Row(r);
          for (int64_t t = 0; t < n_tokens; ++t) {
            y[t * n_out + r] = dot(w.cols, wrow, x.Row(t));
          }
        }
      },
      /*min_chunk=*/16);
}

void MatMul(const WeightMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool,
            QuantizedRows* scratch) {
  QuantizeRows(x, rows, w.cols, w.traits->vec_dot_type, pool, scratch);
  MatMulQuantized(w, *scratch, y, pool);
}

}  // namespace kvmesh
