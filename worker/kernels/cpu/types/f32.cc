// F32 rows: activations stay f32, so "quantizing" and "dequantizing" are
// copies and the dot product is plain. Products are summed in double, as
// ggml's scalar path does.
#include <cstring>

#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {

void DequantizeRowF32(const void* src, float* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

void QuantizeRowF32(const float* src, void* dst, int64_t n) {
  std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
}

float VecDotF32(int64_t n, const void* w, const void* x) {
  const float* wf = static_cast<const float*>(w);
  const float* xf = static_cast<const float*>(x);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(wf[i] * xf[i]);
  return static_cast<float>(sum);
}

constinit const TypeRecord<TensorType::kF32> kF32Scalar = {
    .vec_dot_type = TensorType::kF32,
    .block_size = 1,
    .bytes_per_block = sizeof(float),
    .to_float = DequantizeRowF32,
    .from_float = QuantizeRowF32,
    .vec_dot = VecDotF32,
};

}  // namespace kvmesh::kernels
