// CUDA kernels against their CPU references. Runs where a GPU is present; on
// a machine without one every test says so and is skipped.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "worker/kernels/cpu/ops.h"
#include "worker/kernels/cuda/cuda_device.h"
#include "worker/kernels/cuda/rms_norm.h"

namespace kvmesh::cuda {
namespace {

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto count = DeviceCount();
    if (!count.ok()) {
      GTEST_SKIP() << "no GPU on this machine (" << count.status().message() << ")";
    }
    std::printf("running on %s\n", DeviceDescription(0)->c_str());
  }
};

TEST_F(CudaKernelsTest, RmsNormMatchesCpuReference) {
  const int64_t rows = 7, n = 4096 + 13;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 2.0f);
  std::vector<float> x(rows * n), w(n), want(rows * n), got(rows * n);
  for (float& v : x) v = dist(rng);
  for (float& v : w) v = dist(rng);
  for (int64_t r = 0; r < rows; ++r) kernels::RmsNorm(&x[r * n], w.data(), &want[r * n], n, 1e-5f);
  float *dx, *dw, *dout;
  ASSERT_EQ(cudaMalloc(&dx, x.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dw, w.size() * 4), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&dout, got.size() * 4), cudaSuccess);
  cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(dw, w.data(), w.size() * 4, cudaMemcpyHostToDevice);
  ASSERT_TRUE(RmsNorm(dx, dw, dout, rows, n, 1e-5f, nullptr).ok());
  ASSERT_EQ(cudaMemcpy(got.data(), dout, got.size() * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  cudaFree(dx);
  cudaFree(dw);
  cudaFree(dout);
  double max_rel = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    max_rel = std::max(max_rel, std::fabs(got[i] - want[i]) / (std::fabs(want[i]) + 1e-3));
  }
  EXPECT_LT(max_rel, 1e-4);
}

TEST(CudaDeviceTest, ReportsAbsenceAsStatus) {
  auto count = DeviceCount();
  if (count.ok()) {
    EXPECT_GT(*count, 0);
  } else {
    EXPECT_EQ(count.status().code(), StatusCode::kUnavailable);
    std::printf("no GPU on this machine: %s\n", count.status().message().c_str());
  }
}

}  // namespace
}  // namespace kvmesh::cuda
