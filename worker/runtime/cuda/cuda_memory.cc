#include "worker/runtime/cuda/cuda_memory.h"

#include <algorithm>
#include <string>

#include "worker/runtime/parallel_plan.h"

#if defined(KVMESH_HAS_CUDA)
#include <cuda_runtime.h>
#endif

namespace kvmesh {

uint64_t CudaWorkspaceBytes(const ModelConfig& c, const DeviceShard& shard) {
  const uint64_t hd = static_cast<uint64_t>(c.head_dim);
  const uint64_t q = hd * static_cast<uint64_t>(shard.num_q_heads());
  const uint64_t kv = hd * static_cast<uint64_t>(shard.num_kv_heads());
  const uint64_t ff = static_cast<uint64_t>(shard.num_ff());
  const uint64_t embd = static_cast<uint64_t>(c.n_embd);
  // Residual, normed, projection and final rows; Q and attention; K and V;
  // gate and up.
  const uint64_t floats_per_token = 4 * embd + 2 * q + 2 * kv + 2 * ff;
  const uint64_t activations = kCudaWorkspaceTokens * floats_per_token * sizeof(float);
  const uint64_t gemm_input = kCudaWorkspaceTokens * std::max({embd, ff, q}) * 2;
  // Logits of up to kCudaWorkspaceLogitRows rows of the device's vocabulary
  // (a step that asks for more, e.g. a prompt's every logit, grows it).
  const uint64_t logits = kCudaWorkspaceLogitRows *
                          static_cast<uint64_t>(shard.vocab_end - shard.vocab_begin) *
                          sizeof(float);
  return activations + gemm_input + logits + kCudaDequantChunkBytes + kCudaAttentionScratchBytes +
         kCudaCublasWorkspaceBytes;
}

StatusOr<GpuMemory> ProbeGpuMemory(int index) {
  const std::string name = "device cuda:" + std::to_string(index);
#if defined(KVMESH_HAS_CUDA)
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    const std::string why = err != cudaSuccess ? cudaGetErrorString(err) : "no device found";
    cudaGetLastError();
    return UnavailableError(name + ": no usable CUDA device on this machine (" + why + ")");
  }
  if (index >= count) {
    return InvalidArgumentError(name + ": this machine has " + std::to_string(count) +
                                " CUDA device(s), cuda:0..cuda:" + std::to_string(count - 1));
  }
  int previous = 0;
  cudaGetDevice(&previous);
  size_t free_bytes = 0, total_bytes = 0;
  cudaError_t e = cudaSetDevice(index);
  if (e == cudaSuccess) e = cudaMemGetInfo(&free_bytes, &total_bytes);
  cudaSetDevice(previous);
  if (e != cudaSuccess) return UnavailableError(name + ": " + cudaGetErrorString(e));
  return GpuMemory{free_bytes, total_bytes};
#else
  return UnavailableError(name + ": this kvmesh build has no CUDA support (built without nvcc); " +
                          "run on cpu:N devices");
#endif
}

}  // namespace kvmesh
