#include "worker/kernels/cpu/kv_row_kernels.h"

#include <algorithm>
#include <span>

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/reference_kernels.h"
#if defined(KVMESH_X86_SIMD)
#include "worker/kernels/cpu/simd/kv_rows_x86.h"
#endif

namespace kvmesh {
namespace {

using kernels::BlockQ4_0;
using kernels::BlockQ8_0;
using kernels::kLegacyBlockSize;

// The reference accumulate: the type's reference to_float, then a float
// axpy, in stack-sized slices (256 values: a whole number of blocks of every
// KV type).
template <kernels::ToFloatFn kToFloat, int64_t kBlockSize, size_t kBlockBytes>
void AccumulateReference(int64_t n, const void* row, float weight, float* out) {
  constexpr int64_t kSlice = 256;
  static_assert(kSlice % kBlockSize == 0);
  float buffer[kSlice];
  const uint8_t* bytes = static_cast<const uint8_t*>(row);
  for (int64_t start = 0; start < n; start += kSlice) {
    const int64_t len = std::min(kSlice, n - start);
    kToFloat(bytes + start / kBlockSize * kBlockBytes, buffer, len);
    for (int64_t i = 0; i < len; ++i) out[start + i] += weight * buffer[i];
  }
}

struct Entry {
  TensorType type;
  KvRowKernels kernels;
};

constexpr Entry kScalarEntries[] = {
    {TensorType::kF32,
     {kernels::VecDotF32, AccumulateReference<kernels::DequantizeRowF32, 1, sizeof(float)>,
      kernels::Isa::kScalar}},
    {TensorType::kF16,
     {kernels::VecDotF16, AccumulateReference<kernels::DequantizeRowF16, 1, sizeof(uint16_t)>,
      kernels::Isa::kScalar}},
    {TensorType::kBF16,
     {kernels::VecDotBf16, AccumulateReference<kernels::DequantizeRowBf16, 1, sizeof(uint16_t)>,
      kernels::Isa::kScalar}},
    {TensorType::kQ8_0,
     {kernels::VecDotQ8_0Q8_0,
      AccumulateReference<kernels::DequantizeRowQ8_0, kLegacyBlockSize, sizeof(BlockQ8_0)>,
      kernels::Isa::kScalar}},
    {TensorType::kQ4_0,
     {kernels::VecDotQ4_0Q8_0,
      AccumulateReference<kernels::DequantizeRowQ4_0, kLegacyBlockSize, sizeof(BlockQ4_0)>,
      kernels::Isa::kScalar}},
};

#if defined(KVMESH_X86_SIMD)
namespace avx2 = kv_rows::avx2;
namespace avx512 = kv_rows::avx512;

constexpr Entry kAvx2Entries[] = {
    {TensorType::kF32, {avx2::DotF32, avx2::AccumulateF32, kernels::Isa::kAvx2}},
    {TensorType::kF16, {avx2::DotF16, avx2::AccumulateF16, kernels::Isa::kAvx2}},
    {TensorType::kBF16, {avx2::DotBf16, avx2::AccumulateBf16, kernels::Isa::kAvx2}},
    {TensorType::kQ8_0, {avx2::DotQ8_0, avx2::AccumulateQ8_0, kernels::Isa::kAvx2}},
    {TensorType::kQ4_0, {avx2::DotQ4_0, avx2::AccumulateQ4_0, kernels::Isa::kAvx2}},
};

constexpr Entry kAvx512Entries[] = {
    {TensorType::kF32, {avx512::DotF32, avx512::AccumulateF32, kernels::Isa::kAvx512}},
    {TensorType::kF16, {avx512::DotF16, avx512::AccumulateF16, kernels::Isa::kAvx512}},
    {TensorType::kBF16, {avx512::DotBf16, avx512::AccumulateBf16, kernels::Isa::kAvx512}},
    {TensorType::kQ8_0, {avx512::DotQ8_0, avx512::AccumulateQ8_0, kernels::Isa::kAvx512}},
    {TensorType::kQ4_0, {avx512::DotQ4_0, avx512::AccumulateQ4_0, kernels::Isa::kAvx512}},
};
#endif

const KvRowKernels* Find(std::span<const Entry> table, TensorType type) {
  for (const Entry& e : table) {
    if (e.type == type) return &e.kernels;
  }
  return nullptr;
}

#if defined(KVMESH_X86_SIMD)
constexpr KvBlockKernels kAvx512F16Blocks = {avx512::ScoresF16, avx512::WeightedSumF16};
#endif

}  // namespace

const KvBlockKernels* GetKvBlockKernels(TensorType type, kernels::Isa isa) {
#if defined(KVMESH_X86_SIMD)
  if (isa == kernels::Isa::kAvx512 && type == TensorType::kF16) return &kAvx512F16Blocks;
#endif
  return nullptr;
}

const KvRowKernels* GetKvRowKernels(TensorType type, kernels::Isa isa) {
#if defined(KVMESH_X86_SIMD)
  if (isa == kernels::Isa::kAvx512) return Find(kAvx512Entries, type);
  if (isa == kernels::Isa::kAvx2) return Find(kAvx2Entries, type);
#endif
  return Find(kScalarEntries, type);
}

}  // namespace kvmesh
