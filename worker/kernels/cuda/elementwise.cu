// Element-wise kernels of the graph. Compiled without FMA contraction
// (CMakeLists.txt), so rotary embedding and the additions round as the CPU
// code does; reductions (norms, argmax) differ from the CPU only in order.
#include <cuda_runtime.h>

#include "worker/kernels/cuda/ops.h"

namespace kvmesh::cuda {
namespace {

constexpr int kThreads = 256;

unsigned Blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }
cudaStream_t S(Stream s) { return static_cast<cudaStream_t>(s); }

template <TensorType T>
__global__ void EmbedKernel(const uint8_t* table, size_t row_bytes, const int32_t* tokens,
                            int64_t rows, int64_t n, float* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= rows * n) return;
  const int64_t r = i / n, c = i % n;
  out[i] = RowElement<T>(table + static_cast<size_t>(tokens[r]) * row_bytes, c);
}

// Block-wide sum of one value per thread (blockDim.x a multiple of 32, at
// most 1024); every thread gets the total.
__device__ float BlockSum(float v) {
  __shared__ float partial[32];
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int warps = blockDim.x / 32;
  v = lane < warps ? partial[lane] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One block per row.
__global__ void RmsNormKernel(const float* x, const float* w, float* out, int64_t n, float eps) {
  const float* xr = x + blockIdx.x * n;
  float* yr = out + blockIdx.x * n;
  float sum = 0.0f;
  // Unrolled so that several loads are in flight (the sum's order is kept).
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += xr[i] * xr[i];
  sum = BlockSum(sum);
  const float scale = 1.0f / sqrtf(sum / static_cast<float>(n) + eps);
#pragma unroll 4
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) yr[i] = (xr[i] * scale) * w[i];
}

// One warp per head.
__global__ void HeadRmsNormKernel(float* x, const float* w, int64_t heads_total, int head_dim,
                                  float eps) {
  const int64_t head = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (head >= heads_total) return;  // whole warps leave together
  float* h = x + head * head_dim;
  float sum = 0.0f;
  for (int i = lane; i < head_dim; i += 32) sum += h[i] * h[i];
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const float scale = 1.0f / sqrtf(sum / static_cast<float>(head_dim) + eps);
  for (int i = lane; i < head_dim; i += 32) h[i] = (h[i] * scale) * w[i];
}

__global__ void AddBiasKernel(float* x, const float* b, int64_t rows, int64_t width) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < rows * width) x[i] += b[i % width];
}

__global__ void AddKernel(float* x, const float* y, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) x[i] += y[i];
}

__global__ void SwiGluKernel(float* gate, const float* up, int64_t n) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) {
    const float g = gate[i];
    gate[i] = g / (1.0f + expf(-g)) * up[i];
  }
}

__global__ void GatherKernel(const float* x, const int64_t* index, int64_t count, int64_t width,
                             float* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < count * width) out[i] = x[index[i / width] * width + i % width];
}

// One thread per (row, head, pair).
__global__ void RopeKernel(float* x, const float* cos_sin, int64_t rows, int64_t width,
                           int head_dim, int n_rot, bool adjacent) {
  const int pairs = n_rot / 2;
  const int64_t heads = width / head_dim;
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= rows * heads * pairs) return;
  const int p = static_cast<int>(i % pairs);
  const int64_t head = i / pairs;  // row * heads + h
  const int64_t row = head / heads;
  float* h = x + head * head_dim;
  const float c = cos_sin[(row * pairs + p) * 2];
  const float s = cos_sin[(row * pairs + p) * 2 + 1];
  float* a = adjacent ? h + 2 * p : h + p;
  float* b = adjacent ? h + 2 * p + 1 : h + p + pairs;
  const float x0 = *a, x1 = *b;
  *a = x0 * c - x1 * s;
  *b = x0 * s + x1 * c;
}

// One block per row: (value, index) maxima, ties to the lower index.
__global__ void ArgmaxKernel(const float* x, int64_t n, int32_t* out) {
  const float* xr = x + blockIdx.x * n;
  float best = -INFINITY;
  int32_t best_i = 0x7fffffff;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) {
    if (xr[i] > best) {
      best = xr[i];
      best_i = static_cast<int32_t>(i);
    }
  }
  __shared__ float values[kThreads];
  __shared__ int32_t indices[kThreads];
  values[threadIdx.x] = best;
  indices[threadIdx.x] = best_i;
  __syncthreads();
  for (int stride = kThreads / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride) {
      const float v = values[threadIdx.x + stride];
      const int32_t j = indices[threadIdx.x + stride];
      if (v > values[threadIdx.x] || (v == values[threadIdx.x] && j < indices[threadIdx.x])) {
        values[threadIdx.x] = v;
        indices[threadIdx.x] = j;
      }
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = indices[0] == 0x7fffffff ? 0 : indices[0];
}

}  // namespace

bool IsCudaWeightType(TensorType type) {
  switch (type) {
    case TensorType::kF32:
    case TensorType::kF16:
    case TensorType::kBF16:
    case TensorType::kQ8_0:
    case TensorType::kQ4_0:
    case TensorType::kQ4_K:
    case TensorType::kQ5_K:
    case TensorType::kQ6_K:
      return true;
    default:
      return false;
  }
}

void EmbedRows(TensorType type, const uint8_t* table, size_t row_bytes, const int32_t* tokens,
               int64_t rows, int64_t n, float* out, Stream stream) {
  if (rows * n == 0) return;
  const unsigned blocks = Blocks(rows * n);
#define KVMESH_EMBED(T)                                                                         \
  case T:                                                                                       \
    EmbedKernel<T><<<blocks, kThreads, 0, S(stream)>>>(table, row_bytes, tokens, rows, n, out); \
    return;
  switch (type) {
    KVMESH_EMBED(TensorType::kF32)
    KVMESH_EMBED(TensorType::kF16)
    KVMESH_EMBED(TensorType::kBF16)
    KVMESH_EMBED(TensorType::kQ8_0)
    KVMESH_EMBED(TensorType::kQ4_0)
    KVMESH_EMBED(TensorType::kQ4_K)
    KVMESH_EMBED(TensorType::kQ5_K)
    KVMESH_EMBED(TensorType::kQ6_K)
    default:
      return;  // the executor refuses other types when it is built
  }
#undef KVMESH_EMBED
}

void RmsNormRows(const float* x, const float* w, float* out, int64_t rows, int64_t n, float eps,
                 Stream stream) {
  if (rows == 0) return;
  RmsNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, S(stream)>>>(x, w, out, n, eps);
}

void HeadRmsNorm(float* x, const float* w, int64_t rows, int64_t heads, int head_dim, float eps,
                 Stream stream) {
  if (rows * heads == 0) return;
  HeadRmsNormKernel<<<Blocks(rows * heads * 32), kThreads, 0, S(stream)>>>(x, w, rows * heads,
                                                                           head_dim, eps);
}

void AddBias(float* x, const float* b, int64_t rows, int64_t width, Stream stream) {
  if (rows * width == 0) return;
  AddBiasKernel<<<Blocks(rows * width), kThreads, 0, S(stream)>>>(x, b, rows, width);
}

void Add(float* x, const float* y, int64_t n, Stream stream) {
  if (n == 0) return;
  AddKernel<<<Blocks(n), kThreads, 0, S(stream)>>>(x, y, n);
}

void SwiGlu(float* gate, const float* up, int64_t n, Stream stream) {
  if (n == 0) return;
  SwiGluKernel<<<Blocks(n), kThreads, 0, S(stream)>>>(gate, up, n);
}

void GatherRows(const float* x, const int64_t* index, int64_t count, int64_t width, float* out,
                Stream stream) {
  if (count * width == 0) return;
  GatherKernel<<<Blocks(count * width), kThreads, 0, S(stream)>>>(x, index, count, width, out);
}

void Rope(float* x, const float* cos_sin, int64_t rows, int64_t width, int head_dim, int n_rot,
          bool adjacent_pairs, Stream stream) {
  const int64_t n = rows * (width / head_dim) * (n_rot / 2);
  if (n == 0) return;
  RopeKernel<<<Blocks(n), kThreads, 0, S(stream)>>>(x, cos_sin, rows, width, head_dim, n_rot,
                                                    adjacent_pairs);
}

void ArgmaxRows(const float* x, int64_t rows, int64_t n, int32_t* out, Stream stream) {
  if (rows == 0) return;
  ArgmaxKernel<<<static_cast<unsigned>(rows), kThreads, 0, S(stream)>>>(x, n, out);
}

}  // namespace kvmesh::cuda
