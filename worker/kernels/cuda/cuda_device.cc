#include "worker/kernels/cuda/cuda_device.h"

#include <cuda_runtime.h>

namespace kvmesh::cuda {

StatusOr<int> DeviceCount() {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess) {
    return UnavailableError(std::string("no usable CUDA device: ") + cudaGetErrorString(err));
  }
  if (count == 0) return UnavailableError("no CUDA device found");
  return count;
}

StatusOr<std::string> DeviceDescription(int index) {
  cudaDeviceProp prop{};
  const cudaError_t err = cudaGetDeviceProperties(&prop, index);
  if (err != cudaSuccess) {
    return UnavailableError("CUDA device " + std::to_string(index) + ": " +
                            cudaGetErrorString(err));
  }
  return std::string(prop.name) + " (sm_" + std::to_string(prop.major) +
         std::to_string(prop.minor) + ", " + std::to_string(prop.totalGlobalMem >> 30) + " GiB)";
}

}  // namespace kvmesh::cuda
