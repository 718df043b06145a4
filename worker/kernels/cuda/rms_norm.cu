#include <cuda_runtime.h>

#include "worker/kernels/cuda/rms_norm.h"

namespace kvmesh::cuda {
namespace {

constexpr int kThreads = 256;

// One block per row: a block-wide sum of squares, then the scaled write.
__global__ void RmsNormKernel(const float* __restrict__ x, const float* __restrict__ weight,
                              float* __restrict__ out, int64_t n, float eps) {
  const int64_t row = blockIdx.x;
  const float* xr = x + row * n;
  float* outr = out + row * n;
  float sum = 0.0f;
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) sum += xr[i] * xr[i];
  // Warp reduction, then across warps through shared memory.
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffff, sum, offset);
  __shared__ float warp_sums[kThreads / 32];
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) warp_sums[warp] = sum;
  __syncthreads();
  if (warp == 0) {
    sum = lane < blockDim.x / 32 ? warp_sums[lane] : 0.0f;
    for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffff, sum, offset);
    if (lane == 0) warp_sums[0] = sum;
  }
  __syncthreads();
  const float scale = rsqrtf(warp_sums[0] / static_cast<float>(n) + eps);
  for (int64_t i = threadIdx.x; i < n; i += blockDim.x) outr[i] = xr[i] * scale * weight[i];
}

}  // namespace

Status RmsNorm(const float* x, const float* weight, float* out, int64_t rows, int64_t n, float eps,
               void* stream) {
  if (rows <= 0 || n <= 0) return InvalidArgumentError("RmsNorm: empty input");
  RmsNormKernel<<<static_cast<unsigned>(rows), kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      x, weight, out, n, eps);
  const cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess)
    return InternalError(std::string("RmsNorm launch: ") + cudaGetErrorString(err));
  return Status::Ok();
}

}  // namespace kvmesh::cuda
