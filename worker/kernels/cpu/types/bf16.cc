// BF16 rows. Activations are rounded to bf16 (round-to-nearest-even) before
// the dot product, as llama.cpp does for BF16 weights. Products of two bf16
// values are exact in float; the sum runs in double like ggml's scalar path.
#include "common/half.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {

void DequantizeRowBf16(const void* src, float* dst, int64_t n) {
  const uint16_t* b = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFloat(b[i]);
}

void QuantizeRowBf16(const float* src, void* dst, int64_t n) {
  uint16_t* b = static_cast<uint16_t*>(dst);
  for (int64_t i = 0; i < n; ++i) b[i] = FloatToBf16(src[i]);
}

float VecDotBf16(int64_t n, const void* w, const void* x) {
  const uint16_t* wb = static_cast<const uint16_t*>(w);
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    sum += static_cast<double>(Bf16ToFloat(wb[i]) * Bf16ToFloat(xb[i]));
  }
  return static_cast<float>(sum);
}

constinit const TypeRecord<TensorType::kBF16> kBF16Scalar = {
    .vec_dot_type = TensorType::kBF16,
    .block_size = 1,
    .bytes_per_block = sizeof(uint16_t),
    .to_float = DequantizeRowBf16,
    .from_float = QuantizeRowBf16,
    .vec_dot = VecDotBf16,
};

}  // namespace kvmesh::kernels
