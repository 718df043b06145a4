// ModelExecutor: the engine's Executor for a model on the devices of a
// ParallelPlan. It validates each step once, runs the model graph
// (LlamaGraph) over one GraphBackend per device, and gathers the logits.
//
//   one device   the graph runs on the calling thread (the engine loop).
//   layer split  each device runs its layer range, one after another, on the
//                calling thread; the residual stream hops between them.
//   tensor split every device runs the whole graph on its shard at once:
//                device 0 on the calling thread, the others on their
//                DeviceThreads; the backends meet in the Communicator's
//                all-reduces, and each writes its vocabulary slice of the
//                logits.
// A device pinned to cores (cpu:N@0-7) always runs on its own DeviceThread,
// which keeps to those cores like its pool's workers.
//
// KV block ids are global: every device keeps pages for every block, holding
// its layers (layer split) or its heads (tensor split). ReadBlock/WriteBlock
// assemble a block from the devices in the one-device byte layout, so pages
// move between plans and tiers unchanged.
//
// Driven by one thread (the engine loop), like any Executor.
#pragma once

#include <functional>
#include <memory>
#include <string_view>
#include <vector>

#include "worker/kernels/cpu/cpu_features.h"
#include "worker/kv/kv_memory_fit.h"
#include "worker/model/llama_graph.h"
#include "worker/model/model.h"
#include "worker/runtime/communicator.h"
#include "worker/runtime/cuda/cuda_memory.h"
#include "worker/runtime/device_thread.h"
#include "worker/runtime/executor.h"
#include "worker/runtime/graph_backend.h"
#include "worker/runtime/parallel_plan.h"

namespace kvmesh {

class ModelExecutor : public Executor {
 public:
  // `model` must outlive the executor. `layout` must match the model (layers,
  // KV heads, head size) and be valid. Fails with a message naming the device
  // for a device this build cannot drive or a thread it cannot pin. `isa`
  // caps the CPU kernels' tier.
  static StatusOr<std::unique_ptr<ModelExecutor>> Create(const Model& model, const KvLayout& layout,
                                                         const ParallelPlan& plan,
                                                         int64_t num_blocks,
                                                         kernels::Isa isa = kernels::ActiveIsa());

  // The plan `options` describe for `model` (ParallelPlan::Make), then as
  // above.
  static StatusOr<std::unique_ptr<ModelExecutor>> Create(const Model& model, const KvLayout& layout,
                                                         const PlanOptions& options,
                                                         int64_t num_blocks,
                                                         kernels::Isa isa = kernels::ActiveIsa());

  // One unpinned CPU device of `num_threads` threads: what tests and tools
  // that need no plan use.
  static StatusOr<std::unique_ptr<ModelExecutor>> CreateOnCpu(
      const Model& model, const KvLayout& layout, int64_t num_blocks, int num_threads,
      kernels::Isa isa = kernels::ActiveIsa());

  ~ModelExecutor() override;

  const KvLayout& kv_layout() const override { return layout_; }
  int64_t num_blocks() const override { return num_blocks_; }
  Status Forward(const ForwardBatch& batch, ForwardOutput* output) override;
  Status ReadBlock(int32_t block, std::vector<uint8_t>* out) const override;
  Status WriteBlock(int32_t block, std::span<const uint8_t> bytes) override;
  Status ReadBlockInto(int32_t block, std::span<uint8_t> out) const override;

  const ParallelPlan& plan() const { return plan_; }
  // Per device, in plan order.
  std::vector<DeviceCounters> Counters() const;

 private:
  ModelExecutor(const Model& model, const KvLayout& layout, ParallelPlan plan, int64_t num_blocks);

  Status Validate(const ForwardBatch& batch) const;
  // Runs job(d) for each device, on its thread or the caller's: all at once
  // (tensor split) or in plan order.
  void RunOnDevices(const std::function<void(int)>& job, bool concurrent);
  // One forward step on every device; their faults are left for TakeError.
  void RunStep(const StepView& step, int64_t n_tokens);

  const ModelConfig& config_;
  const KvLayout layout_;
  const ParallelPlan plan_;
  const int64_t num_blocks_;
  const int max_window_;  // ModelConfig::MaxWindow
  const LlamaGraph graph_;
  std::vector<std::unique_ptr<Communicator>> comms_;  // tensor split, one per device
  std::vector<std::unique_ptr<GraphBackend>> backends_;
  std::vector<std::unique_ptr<DeviceThread>> threads_;  // per device; null: the caller's

  // Per-step scratch (kept between steps).
  std::vector<int32_t> positions_;
  std::vector<int32_t> token_seq_;
  std::vector<int64_t> logit_rows_;
  std::vector<float> residual_;  // the hop between devices of a layer split
};

// How many KV blocks `budget_text` (--kv-memory) buys on every device of
// `plan`: the least over the devices of what each one's budget holds of its
// share of a block. An absolute budget applies to each device; a fraction to
// the memory each has left after its own weights (CPU devices share the
// host's available memory evenly). A CUDA device's memory is what `probe`
// reports free on its GPU (shared evenly by the plan's virtual devices on
// that GPU) less its workspace, and an absolute budget must fit in it too.
// Errors name the device and the bytes.
using GpuMemoryProbe = std::function<StatusOr<GpuMemory>(int gpu)>;
StatusOr<KvFit> FitKvBlocksOnDevices(std::string_view budget_text, const KvLayout& layout,
                                     const ParallelPlan& plan, int64_t context_tokens,
                                     const GpuMemoryProbe& probe = ProbeGpuMemory);

// With window pages (KvLayout::window_blocks) of `window_blocks` blocks, how
// many blocks of the other layers the memory of `whole_blocks` whole blocks
// (FitKvBlocksOnDevices) buys on every device of `plan`: the least over the
// devices, at least whole_blocks when no device's budget shrinks. 0 when a
// device of windowed layers only cannot hold the window pages in the memory
// of whole_blocks; 8 × whole_blocks (block ids without pages) when every
// device holds windowed layers only.
int64_t BlocksBesideWindowPages(int64_t whole_blocks, int64_t window_blocks,
                                const ParallelPlan& plan, const ModelConfig& config);

}  // namespace kvmesh
