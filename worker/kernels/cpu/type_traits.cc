#include "worker/kernels/cpu/type_traits.h"

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

using T = TensorType;

// vec_dot pairings are llama.cpp's CPU backend's, so activations round the
// same way as there.
constexpr TypeTraits kTraits[] = {
    {T::kF32, T::kF32, 1, sizeof(float), DequantizeRowF32, QuantizeRowF32, VecDotF32},
    {T::kF16, T::kF16, 1, sizeof(uint16_t), DequantizeRowF16, QuantizeRowF16, VecDotF16},
    {T::kBF16, T::kBF16, 1, sizeof(uint16_t), DequantizeRowBf16, QuantizeRowBf16, VecDotBf16},
    {T::kQ4_0, T::kQ8_0, kLegacyBlockSize, sizeof(BlockQ4_0), DequantizeRowQ4_0, QuantizeRowQ4_0,
     VecDotQ4_0Q8_0},
    {T::kQ4_1, T::kQ8_1, kLegacyBlockSize, sizeof(BlockQ4_1), DequantizeRowQ4_1, QuantizeRowQ4_1,
     VecDotQ4_1Q8_1},
    {T::kQ5_0, T::kQ8_0, kLegacyBlockSize, sizeof(BlockQ5_0), DequantizeRowQ5_0, QuantizeRowQ5_0,
     VecDotQ5_0Q8_0},
    {T::kQ5_1, T::kQ8_1, kLegacyBlockSize, sizeof(BlockQ5_1), DequantizeRowQ5_1, QuantizeRowQ5_1,
     VecDotQ5_1Q8_1},
    {T::kQ8_0, T::kQ8_0, kLegacyBlockSize, sizeof(BlockQ8_0), DequantizeRowQ8_0, QuantizeRowQ8_0,
     VecDotQ8_0Q8_0},
    {T::kQ8_1, T::kQ8_1, kLegacyBlockSize, sizeof(BlockQ8_1), DequantizeRowQ8_1, QuantizeRowQ8_1,
     nullptr},
    {T::kQ4_K, T::kQ8_K, kSuperBlockSize, sizeof(BlockQ4_K), DequantizeRowQ4_K, QuantizeRowQ4_K,
     VecDotQ4_KQ8_K},
    {T::kQ5_K, T::kQ8_K, kSuperBlockSize, sizeof(BlockQ5_K), DequantizeRowQ5_K, QuantizeRowQ5_K,
     VecDotQ5_KQ8_K},
    {T::kQ6_K, T::kQ8_K, kSuperBlockSize, sizeof(BlockQ6_K), DequantizeRowQ6_K, QuantizeRowQ6_K,
     VecDotQ6_KQ8_K},
    {T::kQ8_K, T::kQ8_K, kSuperBlockSize, sizeof(BlockQ8_K), DequantizeRowQ8_K, QuantizeRowQ8_K,
     nullptr},
};

}  // namespace

const TypeTraits* GetTypeTraits(TensorType type) {
  for (const TypeTraits& traits : kTraits) {
    if (traits.type == type) return &traits;
  }
  return nullptr;
}

}  // namespace kvmesh::kernels
