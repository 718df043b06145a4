// Matrix products on the CPU over weights of any supported type.
//
// y[t][r] = W.row(r) · x[t] for every input row (token) t. Weights are
// repacked once into 16-row panels (PackedMatrix; layout in
// worker/kernels/cpu/panel_layout.h); each input is converted once into
// planar rows of the weights' vec_dot_type (QuantizedRows) and shared by every
// matrix that pairs with that type (Q, K and V; gate and up). The panel GEMM
// kernels of the chosen ISA tier then compute whole tiles of rows x tokens.
//
// Work is split over row panels and token chunks, never along K, and every
// kernel reduces an output in one fixed order: a row's result does not depend
// on which other rows share the product (batch invariance), on the thread
// count or on the tiling - and for quantized weights it equals the scalar
// reference vec_dot bit for bit. Panels are handed to threads dynamically, so
// a thread slowed by other load does not hold the others up.
//
// All functions are called from the thread that owns `pool` (the engine
// loop); PackedMatrix is immutable after Pack and may be shared.
#pragma once

#include <cstdint>
#include <span>

#include "common/thread_pool.h"
#include "worker/kernels/cpu/cpu_features.h"
#include "worker/kernels/cpu/panel_gemm.h"
#include "worker/kernels/cpu/panel_layout.h"
#include "worker/model/model_weights.h"
#include "worker/runtime/cpu/aligned_buffer.h"

namespace kvmesh {

// A weight matrix in the panel layout, with the kernel that multiplies it.
class PackedMatrix {
 public:
  PackedMatrix() = default;

  // Repacks `w` (which must have a panel layout, i.e. be a weight type the
  // engine computes with) for tier `isa`, splitting the work over `pool`.
  static PackedMatrix Pack(const WeightMatrix& w, kernels::Isa isa, ThreadPool& pool);

  // Bytes the packed copy of `w` takes.
  static size_t PackedBytes(const WeightMatrix& w);

  // As Pack, into `dst` (PackedBytes(w) bytes, 64-byte aligned), which the
  // caller owns and keeps alive as long as the result: a model packs all its
  // matrices into one buffer, in the order a forward pass reads them.
  static PackedMatrix PackInto(const WeightMatrix& w, kernels::Isa isa, ThreadPool& pool,
                               uint8_t* dst);

  TensorType type() const { return type_; }
  TensorType vec_dot_type() const { return vec_dot_type_; }
  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  int64_t num_panels() const { return kernels::NumPanels(rows_); }
  size_t panel_bytes() const { return panel_bytes_; }
  const uint8_t* Panel(int64_t p) const { return data_ + p * panel_bytes_; }
  kernels::PanelGemmFn gemm() const { return gemm_; }

 private:
  TensorType type_ = TensorType::kF32;
  TensorType vec_dot_type_ = TensorType::kF32;
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  size_t panel_bytes_ = 0;
  kernels::PanelGemmFn gemm_ = nullptr;
  const uint8_t* data_ = nullptr;  // panels_ or the caller's buffer
  AlignedBuffer panels_;
};

// Converted activations: `rows` planar rows of `cols` values of `type`.
struct QuantizedRows {
  TensorType type = TensorType::kF32;
  int64_t cols = 0;
  int64_t rows = 0;
  kernels::PlanarLayout layout;
  AlignedBuffer planar;

  const uint8_t* Row(int64_t r) const { return planar.data() + r * layout.row_bytes; }
};

// Converts `rows` rows of `cols` floats to `type` (a vec_dot_type), with
// exactly the values of that type's reference from_float.
void QuantizeRows(const float* x, int64_t rows, int64_t cols, TensorType type, ThreadPool& pool,
                  QuantizedRows* out);

// One product of a batch sharing the same activations: y (x.rows x w->rows())
// = x · Wᵀ, rows of y packed (stride w->rows()).
struct MatMulTarget {
  const PackedMatrix* w;
  float* y;
};

// Computes every target (at most 4) in one parallel region, so a decode step
// pays one thread hand-off for Q, K and V together. x must be converted to
// each target's vec_dot_type and have its cols.
void MatMulQuantized(std::span<const MatMulTarget> targets, const QuantizedRows& x,
                     ThreadPool& pool);

inline void MatMulQuantized(const PackedMatrix& w, const QuantizedRows& x, float* y,
                            ThreadPool& pool) {
  const MatMulTarget target{&w, y};
  MatMulQuantized(std::span<const MatMulTarget>(&target, 1), x, pool);
}

// Multiplies one input x (rows x cols floats) by several matrices: converts x
// once per distinct vec_dot_type into *scratch and computes the matrices of
// each type in one parallel region.
void MatMulShared(const float* x, int64_t rows, std::span<const MatMulTarget> targets,
                  ThreadPool& pool, QuantizedRows* scratch);

// Convenience: converts x (rows x w.cols()) into *scratch and multiplies.
void MatMul(const PackedMatrix& w, const float* x, int64_t rows, float* y, ThreadPool& pool,
            QuantizedRows* scratch);

}  // namespace kvmesh
