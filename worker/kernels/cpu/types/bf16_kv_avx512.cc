// bf16 KV rows, AVX-512: widening is a 16-bit shift; products and sums are in
// float; tails by masked loads.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx512.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

struct Bf16 {
  using Element = uint16_t;
  static __m512 Widen(__m256i halves) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(halves), 16));
  }
  static __m512 Load(const uint16_t* b) {
    return Widen(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b)));
  }
  static __m512 LoadTail(__mmask16 m, const uint16_t* b) {
    return Widen(_mm256_maskz_loadu_epi16(m, b));
  }
};

float DotBf16(int64_t n, const void* k, const void* q) { return DotFloatRow<Bf16>(n, k, q); }

void AccumulateBf16(int64_t n, const void* v, float weight, float* out) {
  AccumulateFloatRow<Bf16>(n, v, weight, out);
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512

namespace kvmesh::kernels {

constinit const KvRowRecord<TensorType::kBF16, Isa::kAvx512> kBF16KvAvx512 = {
    .dot = kv_rows::avx512::DotBf16,
    .accumulate = kv_rows::avx512::AccumulateBf16,
};

}  // namespace kvmesh::kernels
