// RMSNorm on the GPU: out[r] = x[r] / sqrt(mean(x[r]^2) + eps) * weight, for
// `rows` rows of `n` floats. Device pointers; runs on `stream`. Tested against
// the CPU reference kernels::RmsNorm.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace kvmesh::cuda {

Status RmsNorm(const float* x, const float* weight, float* out, int64_t rows, int64_t n, float eps,
               void* stream);

}  // namespace kvmesh::cuda
