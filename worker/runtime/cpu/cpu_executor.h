// CpuExecutor: the reference executor. Runs the llama-family forward pass for
// a whole engine step on the CPU with a persistent thread pool, reading and
// writing K/V through block tables in CpuKvPages.
//
// Each weight matrix is read once per step for all the step's tokens. K and V
// are written into their pages once, when computed, in the layout's storage
// types and after its K transforms (centering, rotation); attention reads the
// pages as stored, with the widest row kernels this CPU supports. Owned and
// driven by one thread (the engine loop).
#pragma once

#include <memory>
#include <vector>

#include "common/thread_pool.h"
#include "worker/kernels/cpu/ops.h"
#include "worker/model/model.h"
#include "worker/runtime/cpu/cpu_attention.h"
#include "worker/runtime/cpu/cpu_kv_pages.h"
#include "worker/runtime/cpu/cpu_matmul.h"
#include "worker/runtime/cpu/packed_weights.h"
#include "worker/runtime/cpu/rope.h"
#include "worker/runtime/executor.h"

namespace kvmesh {

class CpuExecutor : public Executor {
 public:
  // `model` must outlive the executor. `layout` must match the model (layers,
  // KV heads, head size) and be valid. `isa` caps the attention row kernels
  // (tests and benchmarks compare the scalar reference with SIMD this way).
  static StatusOr<std::unique_ptr<CpuExecutor>> Create(const Model& model, const KvLayout& layout,
                                                       int64_t num_blocks, int num_threads,
                                                       kernels::Isa isa = kernels::ActiveIsa());

  const KvLayout& kv_layout() const override { return pages_.layout(); }
  int64_t num_blocks() const override { return pages_.num_blocks(); }
  Status Forward(const ForwardBatch& batch, ForwardOutput* output) override;
  Status ReadBlock(int32_t block, std::vector<uint8_t>* out) const override;
  Status WriteBlock(int32_t block, std::span<const uint8_t> bytes) override;

  ThreadPool& pool() { return pool_; }

 private:
  CpuExecutor(const Model& model, const KvLayout& layout, int64_t num_blocks, int num_threads,
              kernels::Isa isa);

  Status Validate(const ForwardBatch& batch) const;
  void Embed(const std::vector<int32_t>& tokens);
  void AttentionLayer(int layer, const ForwardBatch& batch);
  void FeedForwardLayer(int layer, int64_t n_tokens);
  void ComputeLogits(const ForwardBatch& batch, ForwardOutput* output);

  const Model& model_;
  const ModelConfig& config_;
  ThreadPool pool_;
  CpuKvPages pages_;
  AttentionKernels attention_kernels_;
  PackedWeights packed_;            // every matrix repacked for the matrix kernels
  const kernels::RowOps& row_ops_;  // norm and SwiGLU of the same tier
  RopeTable rope_;

  // Per-step scratch, sized to the largest step seen (kept to avoid
  // reallocating every step).
  std::vector<int32_t> positions_;
  std::vector<int32_t> token_seq_;  // sequence index of each token
  std::vector<float> x_, h_, q_, k_, v_, attn_, proj_, gate_, up_;
  QuantizedRows xq_;
};

}  // namespace kvmesh
