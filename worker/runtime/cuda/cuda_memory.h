// What a CUDA device of a plan needs besides its weights and KV pages, and
// how much memory a GPU has free. Built into every worker (with or without
// CUDA), so plans, memory fit and their tests are the same everywhere.
#pragma once

#include <cstdint>

#include "common/status.h"
#include "worker/model/model_config.h"

namespace kvmesh {

struct DeviceShard;

// The CUDA executor's fixed buffers (worker/runtime/cuda/cuda_executor.h).
inline constexpr int64_t kCudaWorkspaceTokens = 4096;    // step size the estimate covers
inline constexpr int64_t kCudaWorkspaceLogitRows = 256;  // logit rows it covers
inline constexpr uint64_t kCudaDequantChunkBytes = uint64_t{64} << 20;
inline constexpr uint64_t kCudaAttentionScratchBytes = uint64_t{64} << 20;
inline constexpr uint64_t kCudaCublasWorkspaceBytes = uint64_t{32} << 20;

// Device memory the executor needs besides weights and KV pages: the
// activations of a step of kCudaWorkspaceTokens tokens and the fixed
// buffers above.
uint64_t CudaWorkspaceBytes(const ModelConfig& config, const DeviceShard& shard);

struct GpuMemory {
  uint64_t free_bytes = 0;
  uint64_t total_bytes = 0;
};

// cudaMemGetInfo of GPU `index`. Unavailable, with a message a user can act
// on, in a build without CUDA or on a machine without a usable GPU.
StatusOr<GpuMemory> ProbeGpuMemory(int index);

}  // namespace kvmesh
