// F16 rows. Activations are rounded to f16 (round-to-nearest-even) before the
// dot product, as llama.cpp does for F16 weights. The product of two halves is
// exact in float (11 x 11 significant bits), so only the summation rounds; it
// runs in double like ggml's scalar path.
#include "common/half.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {

void DequantizeRowF16(const void* src, float* dst, int64_t n) {
  const uint16_t* h = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = HalfToFloat(h[i]);
}

void QuantizeRowF16(const float* src, void* dst, int64_t n) {
  uint16_t* h = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) h[i] = FloatToHalf(src[i]);
}

float VecDotF16(int64_t n, const void* w, const void* x) {
  const uint16_t* wh = static_cast<const uint16_t*>(w);
  const uint16_t* xh = static_cast<const uint16_t*>(x);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += static_cast<double>(HalfToFloat(wh[i]) * HalfToFloat(xh[i]));
  }
  return static_cast<float>(sum);
}

constinit const TypeRecord<TensorType::kF16> kF16Scalar = {
    .vec_dot_type = TensorType::kF16,
    .block_size = 1,
    .bytes_per_block = sizeof(uint16_t),
    .to_float = DequantizeRowF16,
    .from_float = QuantizeRowF16,
    .vec_dot = VecDotF16,
};

}  // namespace kvmesh::kernels
