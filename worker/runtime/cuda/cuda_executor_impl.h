// The CUDA executor's state (worker/runtime/cuda/cuda_executor.h), shared
// by its two source files: cuda_executor_load.cc (building: checks, memory
// fit, uploads) and cuda_executor.cc (the step). Internal.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "worker/kernels/cuda/ops.h"
#include "worker/kv/kv_memory_fit.h"
#include "worker/runtime/cpu/rope.h"
#include "worker/runtime/cuda/cuda_executor.h"

namespace kvmesh {
namespace cuda_internal {

constexpr size_t kAlign = 256;
constexpr int kNumActs = static_cast<int>(Act::kLogits) + 1;

inline size_t AlignUp(size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

inline Status CudaError(cudaError_t err, const std::string& what) {
  if (err == cudaSuccess) return Status::Ok();
  return InternalError(what + ": " + cudaGetErrorString(err));
}

inline bool IsQuantized(TensorType t) {
  return t != TensorType::kF32 && t != TensorType::kF16 && t != TensorType::kBF16;
}

// A device allocation, freed with the object; grows, never shrinks.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr_ != nullptr) cudaFree(ptr_);
  }
  Status Reserve(size_t bytes) {
    if (bytes <= size_) return Status::Ok();
    const size_t want = std::max(bytes, size_ + size_ / 2);
    if (ptr_ != nullptr) cudaFree(ptr_);
    ptr_ = nullptr;
    size_ = 0;
    RETURN_IF_ERROR(CudaError(cudaMalloc(&ptr_, want), "cudaMalloc of " + FormatBytes(want)));
    size_ = want;
    return Status::Ok();
  }
  template <typename T = uint8_t>
  T* get() const {
    return static_cast<T*>(ptr_);
  }
  size_t size() const { return size_; }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

// Page-locked host memory, for copies that overlap the stream.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  ~PinnedBuffer() {
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
  }
  Status Reserve(size_t bytes) {
    if (bytes <= size_) return Status::Ok();
    if (ptr_ != nullptr) cudaFreeHost(ptr_);
    ptr_ = nullptr;
    const size_t want = std::max(bytes, size_ + size_ / 2);
    size_ = 0;
    RETURN_IF_ERROR(
        CudaError(cudaMallocHost(&ptr_, want), "cudaMallocHost of " + FormatBytes(want)));
    size_ = want;
    return Status::Ok();
  }
  template <typename T = uint8_t>
  T* get() const {
    return static_cast<T*>(ptr_);
  }

 private:
  void* ptr_ = nullptr;
  size_t size_ = 0;
};

struct LayerMatrices {
  cuda::DeviceMatrix wq, wk, wv, wo, w_gate, w_up, w_down;
};

struct LayerVectors {
  const float* attn_norm = nullptr;
  const float* ffn_norm = nullptr;
  const float* bq = nullptr;
  const float* bk = nullptr;
  const float* bv = nullptr;
  const float* q_norm = nullptr;
  const float* k_norm = nullptr;
  // Gemma-style post-norms: never set (the executor refuses gemma2).
  const float* attn_post_norm = nullptr;
  const float* ffn_post_norm = nullptr;
};

}  // namespace cuda_internal

using namespace cuda_internal;

struct CudaExecutor::Impl {
  Impl(const Model& model, const KvLayout& layout, const DeviceShard& shard, int64_t num_blocks,
       Communicator* comm, const CudaExecutorOptions& options)
      : config(model.config()),
        shard(shard),
        layout(layout),
        shard_layout(shard.ShardLayout(layout)),
        num_blocks(num_blocks),
        comm(comm),
        options(options),
        rope(model.config().rope, model.weights().rope_freq_factors) {}

  ~Impl() {
    cudaSetDevice(shard.device.index);
    if (stream != nullptr) cudaStreamSynchronize(stream);
    DropGraphs();
    if (cublas != nullptr) cublasDestroy(cublas);
    if (stream != nullptr) cudaStreamDestroy(stream);
  }

  Status Init(const Model& model);
  void Fail(const Status& s) {
    if (error.ok() && !s.ok()) error = s.WithPrefix("device " + shard.device.Name());
  }
  void Fail(cudaError_t err, const char* what) { Fail(CudaError(err, what)); }
  // After a failure in this step, ops launch nothing more (buffers may be
  // missing or stale); the step reports the first error. A step replayed
  // from a graph launches nothing either: the graph holds its kernels.
  bool Skip() const { return !error.ok() || graph_mode == GraphMode::kReplay; }
  // Launch errors are per host thread: each op checks on the thread that
  // launched it (a device of a tensor split runs on its own thread).
  void CheckLaunch(const char* op) { Fail(cudaGetLastError(), op); }
  void Fail(cublasStatus_t st, const char* what) {
    if (st != CUBLAS_STATUS_SUCCESS) {
      Fail(InternalError(std::string(what) + ": cuBLAS status " + std::to_string(st)));
    }
  }

  int64_t Rows(Act a) const {
    return a == Act::kFinal || a == Act::kLogits ? static_cast<int64_t>(step.logit_rows.size())
                                                 : n_tokens;
  }
  float* A(Act a) const { return acts[static_cast<int>(a)].get<float>(); }
  int64_t Width(Act a) const { return width[static_cast<int>(a)]; }
  const float* VectorOf(int layer, Vector v) const;
  const cuda::DeviceMatrix& MatrixOf(int layer, Matrix m) const;
  void Gemm(const cuda::DeviceMatrix& m, const float* x, int64_t rows, float* y, int64_t ldy,
            int* x16_format);
  cuda::PagedKv PagesOf(int local_layer) const;

  const ModelConfig& config;
  const DeviceShard shard;
  const KvLayout layout;  // the whole model's
  const KvLayout shard_layout;
  const int64_t num_blocks;
  Communicator* comm;
  const CudaExecutorOptions options;
  RopeTable rope;

  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  DeviceBuffer weights;
  uint64_t weight_bytes = 0;
  std::vector<LayerMatrices> layers;
  std::vector<LayerVectors> vectors;
  cuda::DeviceMatrix embedding, output;
  const float* output_norm = nullptr;
  DeviceBuffer k_pages, v_pages, k_mean;
  size_t k_layer_bytes = 0, v_layer_bytes = 0;

  // The step.
  StepView step;
  int64_t n_tokens = 0;
  int32_t max_context = 0;
  DeviceBuffer acts[kNumActs];
  int64_t width[kNumActs] = {};
  PinnedBuffer step_host;
  DeviceBuffer step_device;
  const int32_t* d_tokens = nullptr;
  const int32_t* d_positions = nullptr;
  const int32_t* d_table_offset = nullptr;
  const int32_t* d_tables = nullptr;
  const int64_t* d_logit_index = nullptr;
  const float* d_rope = nullptr;
  DeviceBuffer xq, x16, dequant, attention_scratch, cublas_workspace, argmax;
  PinnedBuffer host_logits, host_reduce;
  bool logits_pending = false;

  // CUDA graphs of decode steps (CudaExecutorOptions::graphs). A graph bakes
  // in every pointer and size its kernels were launched with: the step's
  // shape (tokens, logit rows, the context rounded up to kGraphContext, so
  // split-K's grid is fixed) is its key, and the buffers' addresses its
  // signature; when a buffer moves, every graph goes.
  enum class GraphMode { kNone, kCapture, kReplay };
  using GraphKey = std::tuple<int64_t, int64_t, int32_t>;  // tokens, logit rows, context cap
  static constexpr int32_t kGraphContext = 1024;
  // Past this many shapes the graphs are all dropped and captured again as
  // the shapes recur: a server's batch sizes times its contexts would
  // otherwise keep adding graphs (each holds device memory) for ever.
  static constexpr size_t kMaxGraphs = 64;
  GraphMode graph_mode = GraphMode::kNone;
  GraphKey graph_key{}, last_graph_key{-1, -1, -1};
  uint64_t graph_signature = 0;
  int64_t graph_table_cap = 0;  // block-table entries the step layout holds
  bool graphs_off = false;      // after a failed capture
  std::atomic<uint64_t> graph_launches{0};
  std::map<GraphKey, cudaGraphExec_t> graphs;
  // The addresses a graph of a decode step bakes in.
  uint64_t GraphSignature() const {
    uint64_t signature = static_cast<uint64_t>(graph_table_cap);
    auto mix = [&](const void* p) {
      signature = (signature ^ reinterpret_cast<uintptr_t>(p)) * 0x100000001b3ull;
    };
    mix(step_device.get());
    for (const DeviceBuffer& a : acts) mix(a.get());
    mix(xq.get());
    mix(host_logits.get());
    mix(attention_scratch.get());
    return signature;
  }
  void DropGraphs() {
    for (auto& [key, exec] : graphs) cudaGraphExecDestroy(exec);
    graphs.clear();
  }
  Status error;
  std::atomic<double> comm_seconds{0.0};
};

}  // namespace kvmesh
