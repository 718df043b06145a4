// CpuExecutor: the CPU backend of the model graph (GraphBackend) for one CPU
// device - every layer of a model, or one device's share of a ParallelPlan.
// It is the reference backend: the scalar kernels always build, and every
// SIMD tier gives the same results (see cpu_matmul.h, cpu_attention.h).
//
// The device owns a persistent thread pool (optionally pinned to cores), its
// share of the weights repacked for the matrix kernels (one buffer in the
// order a forward pass reads them), and the KV pages of its layers and heads
// (CpuKvPages). Each weight matrix is read once per step for all the step's
// tokens. K and V are written into their pages once, when computed, in the
// layout's storage types and after its K transforms (centering, rotation);
// attention reads the pages as stored, with the widest row kernels this CPU
// supports.
//
// Driven by one thread at a time (the engine loop, or the DeviceThread of
// its device in a multi-device plan), which calls the GraphBackend ops of a
// step in order.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <vector>

#include "common/thread_pool.h"
#include "worker/kernels/cpu/ops.h"
#include "worker/model/model.h"
#include "worker/runtime/communicator.h"
#include "worker/runtime/cpu/cpu_attention.h"
#include "worker/runtime/cpu/cpu_kv_pages.h"
#include "worker/runtime/cpu/cpu_matmul.h"
#include "worker/runtime/cpu/packed_weights.h"
#include "worker/runtime/cpu/rope.h"
#include "worker/runtime/graph_backend.h"
#include "worker/runtime/parallel_plan.h"
#include "worker/runtime/weight_shard.h"

namespace kvmesh {

class CpuExecutor : public GraphBackend {
 public:
  // `model` must outlive the executor; `layout` is the whole model's KV
  // layout (validated by the caller) and `shard` this device's part of the
  // plan. `comm` (kept, not owned; null alone) joins the devices of a tensor
  // split. `isa` caps the kernels' tier (tests and benchmarks compare the
  // scalar reference with SIMD this way).
  static StatusOr<std::unique_ptr<CpuExecutor>> Create(const Model& model, const KvLayout& layout,
                                                       const DeviceShard& shard, int64_t num_blocks,
                                                       Communicator* comm,
                                                       kernels::Isa isa = kernels::ActiveIsa());

  void BeginStep(const StepView& step) override;
  void Embed() override;
  void SelectLogitRows() override;
  void RmsNorm(Act in, Act out, int layer, Vector weight) override;
  void HeadRmsNorm(Act a, int layer, Vector weight) override;
  void AddBias(Act a, int layer, Vector bias) override;
  void MatMul(Act in, int layer, std::span<const MatMulOut> outs) override;
  void Rope(Act a, int layer) override;
  void Attention(int layer) override;
  void SwiGlu(Act gate, Act up) override;
  void GeGlu(Act gate, Act up) override;
  void Scale(Act a, float factor) override;
  void MoeFeedForward(int layer) override;
  void Add(Act dst, Act src) override;
  void AllReduce(Act a) override;
  void ReadResidual(float* dst) override;
  void WriteResidual(const float* src) override;
  void ReadBlock(int32_t block, uint8_t* full) const override;
  void WriteBlock(int32_t block, const uint8_t* full) override;
  DeviceCounters counters() const override;  // any thread
  Status TakeError() override;

 private:
  CpuExecutor(const Model& model, const KvLayout& layout, const DeviceShard& shard,
              WeightShard weights, int64_t num_blocks, Communicator* comm, kernels::Isa isa);

  struct Buffer {
    std::vector<float> data;
    int64_t width = 0;  // floats per row
  };
  Buffer& Buf(Act a) { return buffers_[static_cast<int>(a)]; }
  int64_t Rows(Act a) const;
  const std::vector<float>& VectorOf(int layer, Vector v) const;
  const PackedMatrix& MatrixOf(int layer, Matrix m) const;
  // fn(row) for each row in [0, rows), split over the pool.
  template <typename Fn>
  void ForEachRow(int64_t rows, const Fn& fn) {
    pool_.ParallelFor(rows, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r) fn(r);
    });
  }
  // proj += the layer's shared expert of x (qwen2moe), each token's row
  // scaled by sigmoid(x · ffn_gate_inp_shexp).
  void SharedExpert(int layer, const float* x, float* proj);
  // Calls fn(offset in the whole block's bytes, local layer, slot, is V,
  // bytes) for each run of this device's rows of one block.
  template <typename Fn>
  void ForEachBlockRun(const Fn& fn) const;

  const ModelConfig& config_;
  const DeviceShard shard_;
  const KvLayout layout_;  // the whole model's: transforms take global layer and head indices
  ThreadPool pool_;
  CpuKvPages pages_;  // this device's layers and KV heads
  AttentionKernels attention_kernels_;
  WeightShard weights_;  // vectors, embedding and slices (matrices are packed below)
  PackedWeights packed_;
  const kernels::RowOps& row_ops_;  // norm and SwiGLU of the same tier
  RopeTable rope_;
  std::optional<RopeTable> window_rope_;  // ModelConfig::window_rope's
  // Attention's tiles of consecutive positions (rebuilt per layer call).
  struct Tile {
    int64_t first_token = 0;
    int32_t num_tokens = 0;
  };
  std::vector<Tile> tiles_;
  // Where attention splits long contexts over threads: each tile's first
  // partition slot, and the slots' outputs and softmax (rebuilt per layer
  // call, kept to avoid reallocating).
  std::vector<int64_t> part_first_;
  std::vector<float> part_outputs_;
  std::vector<PartialSoftmax> part_softmax_;
  Communicator* comm_;

  // The step being computed (valid between BeginStep and the next).
  StepView step_;
  int64_t n_tokens_ = 0;
  // Per-step activations, sized to the largest step seen (kept to avoid
  // reallocating every step).
  Buffer buffers_[static_cast<int>(Act::kLogits) + 1];
  // MoeFeedForward's router logits, choices and per-expert rows (kept to
  // avoid reallocating).
  struct MoeScratch {
    std::vector<float> logits;                 // [tokens][n_expert]
    std::vector<int32_t> chosen;               // [tokens][n_expert_used]
    std::vector<float> weight;                 // [tokens][n_expert_used]
    std::vector<std::vector<int64_t>> routed;  // per expert: token * n_expert_used + k
    std::vector<float> in, gate, up, out;      // one expert's rows
  };
  MoeScratch moe_;
  QuantizedRows xq_;
  Status error_;
  // Written by the driving thread, read by counters() from any thread.
  std::atomic<double> comm_seconds_{0.0};
};

}  // namespace kvmesh
