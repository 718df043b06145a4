// CudaExecutor: the CUDA backend of the model graph (GraphBackend) for one
// GPU, or one virtual device on a GPU (cuda:N.V), holding every layer or one
// device's share of a ParallelPlan.
//
//  - Weights are uploaded in their GGUF types (never dequantized at load) in
//    one allocation; norms and biases as floats.
//  - KV pages live in device memory in the layout's storage types, in the
//    CPU's page order and with the CPU's bytes (block_math.h), so
//    ReadBlock/WriteBlock move them between devices and tiers unchanged.
//  - Decode steps (at most matvec_rows rows) quantize each matrix input to
//    8 bits once, shared by the targets, and run the mat-vec of the weight's
//    type; longer steps convert the input to f16/bf16 and run cuBLAS on
//    tensor cores (quantized weights are dequantized in bounded row chunks
//    into a workspace first).
//  - Attention is split-K flash-decoding over the block tables.
//  - One stream per executor; the step's tables go up in one copy; logits
//    come back through pinned memory at the end of the step (TakeError).
//  - `plain` runs the reference kernels only (one thread per output).
//
// Driven by one thread at a time, like every GraphBackend. Buffers grow when
// a step is larger than any before it and are kept.
#pragma once

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <vector>

#include "worker/model/model.h"
#include "worker/runtime/communicator.h"
#include "worker/runtime/cpu/rope.h"
#include "worker/runtime/graph_backend.h"
#include "worker/runtime/parallel_plan.h"

namespace kvmesh {

struct CudaExecutorOptions {
  bool plain = false;  // reference kernels only (tests, debugging)
  // Decode steps replayed from CUDA graphs (KVMESH_CUDA_GRAPHS=on): a
  // device that holds the whole model captures a step of n one-token
  // sequences the second time it sees that shape, and replays it after,
  // one launch instead of a few hundred. Off by default.
  bool graphs = false;
  // Steps of up to this many rows take the decode mat-vecs (weights read
  // once for all rows); longer ones dequantize and multiply on tensor cores.
  // 1-32 (KVMESH_CUDA_MATVEC_ROWS); 8 by default.
  int matvec_rows = 8;

  // From KVMESH_CUDA_KERNELS=plain, KVMESH_CUDA_GRAPHS=on and
  // KVMESH_CUDA_MATVEC_ROWS (a value outside 1-32 is ignored, with a line
  // on stderr).
  static CudaExecutorOptions FromEnv() {
    CudaExecutorOptions options;
    const char* kernels = std::getenv("KVMESH_CUDA_KERNELS");
    options.plain = kernels != nullptr && std::string_view(kernels) == "plain";
    const char* graphs = std::getenv("KVMESH_CUDA_GRAPHS");
    options.graphs = graphs != nullptr && std::string_view(graphs) == "on";
    if (const char* rows = std::getenv("KVMESH_CUDA_MATVEC_ROWS")) {
      const int value = std::atoi(rows);
      if (value >= 1 && value <= 32) {
        options.matvec_rows = value;
      } else {
        std::fprintf(stderr, "kvmesh: ignoring KVMESH_CUDA_MATVEC_ROWS=%s (expected 1-32)\n", rows);
      }
    }
    return options;
  }
};

class CudaExecutor : public GraphBackend {
 public:
  // As CpuExecutor::Create; the shard's device must be a CUDA device of this
  // machine. Fails naming the device: no GPU, a weight type the kernels do
  // not take (naming the tensor), a head size over 256, or memory that does
  // not hold the weights, the pages and the workspace (naming the bytes).
  static StatusOr<std::unique_ptr<CudaExecutor>> Create(const Model& model, const KvLayout& layout,
                                                        const DeviceShard& shard,
                                                        int64_t num_blocks, Communicator* comm,
                                                        const CudaExecutorOptions& options = {});
  ~CudaExecutor() override;

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
  void MoeFeedForward(int layer) override;
  void Add(Act dst, Act src) override;
  void AllReduce(Act a) override;
  void ReadResidual(float* dst) override;
  void WriteResidual(const float* src) override;
  void ReadBlock(int32_t block, uint8_t* full) const override;
  void WriteBlock(int32_t block, const uint8_t* full) override;
  DeviceCounters counters() const override;
  Status TakeError() override;

  // The greedy token of each logit row of the last step, computed on the
  // device (only where this device computes the whole vocabulary).
  Status ArgmaxLogits(std::vector<int32_t>* out);

 private:
  struct Impl;
  explicit CudaExecutor(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kvmesh
