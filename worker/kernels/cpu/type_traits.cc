#include "worker/kernels/cpu/type_traits.h"

#include <algorithm>
#include <iterator>

#include "common/check.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/reference_kernels.h"
#include "worker/kernels/cpu/simd_kernels.h"

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

constexpr size_t kNumTypes = std::size(kTraits);

// The SIMD functions one tier provides.
struct TierKernels {
  VecDotFn vec_dot_f32, vec_dot_f16, vec_dot_bf16;
  VecDotFn vec_dot_q4_0, vec_dot_q4_1, vec_dot_q5_0, vec_dot_q5_1, vec_dot_q8_0;
  VecDotFn vec_dot_q4_k, vec_dot_q5_k, vec_dot_q6_k;
  ToFloatFn to_float_f16, to_float_bf16;
  FromFloatFn from_float_f16, from_float_bf16, from_float_q8_0, from_float_q8_1, from_float_q8_k;
};

// A tier's table: the references with that tier's kernels put in.
struct TierTable {
  TypeTraits traits[kNumTypes];

  TypeTraits& At(TensorType type) {
    for (TypeTraits& t : traits) {
      if (t.type == type) return t;
    }
    KVMESH_CHECK(false);
    return traits[0];
  }
};

TierTable BuildTier(const TierKernels& k) {
  TierTable table;
  std::copy(std::begin(kTraits), std::end(kTraits), table.traits);
  table.At(T::kF32).vec_dot = k.vec_dot_f32;
  TypeTraits& f16 = table.At(T::kF16);
  f16.vec_dot = k.vec_dot_f16;
  f16.to_float = k.to_float_f16;
  f16.from_float = k.from_float_f16;
  TypeTraits& bf16 = table.At(T::kBF16);
  bf16.vec_dot = k.vec_dot_bf16;
  bf16.to_float = k.to_float_bf16;
  bf16.from_float = k.from_float_bf16;
  table.At(T::kQ4_0).vec_dot = k.vec_dot_q4_0;
  table.At(T::kQ4_1).vec_dot = k.vec_dot_q4_1;
  table.At(T::kQ5_0).vec_dot = k.vec_dot_q5_0;
  table.At(T::kQ5_1).vec_dot = k.vec_dot_q5_1;
  table.At(T::kQ8_0).vec_dot = k.vec_dot_q8_0;
  table.At(T::kQ8_0).from_float = k.from_float_q8_0;
  table.At(T::kQ8_1).from_float = k.from_float_q8_1;
  table.At(T::kQ4_K).vec_dot = k.vec_dot_q4_k;
  table.At(T::kQ5_K).vec_dot = k.vec_dot_q5_k;
  table.At(T::kQ6_K).vec_dot = k.vec_dot_q6_k;
  table.At(T::kQ8_K).from_float = k.from_float_q8_k;
  return table;
}

// Every tier's table, indexed by type id for the hot paths (attention looks
// its types up per query).
constexpr int kMaxTypeId = 64;

struct Registry {
  TierTable tiers[3];
  const TypeTraits* by_id[3][kMaxTypeId] = {};

  Registry() {
    for (TierTable& tier : tiers) std::copy(std::begin(kTraits), std::end(kTraits), tier.traits);
#ifdef KVMESH_X86_SIMD
    tiers[static_cast<int>(Isa::kAvx2)] = BuildTier(TierKernels{
        avx2::VecDotF32, avx2::VecDotF16, avx2::VecDotBf16, avx2::VecDotQ4_0Q8_0,
        avx2::VecDotQ4_1Q8_1, avx2::VecDotQ5_0Q8_0, avx2::VecDotQ5_1Q8_1, avx2::VecDotQ8_0Q8_0,
        avx2::VecDotQ4_KQ8_K, avx2::VecDotQ5_KQ8_K, avx2::VecDotQ6_KQ8_K, avx2::DequantizeRowF16,
        avx2::DequantizeRowBf16, avx2::QuantizeRowF16, avx2::QuantizeRowBf16, avx2::QuantizeRowQ8_0,
        avx2::QuantizeRowQ8_1, avx2::QuantizeRowQ8_K});
    tiers[static_cast<int>(Isa::kAvx512)] = BuildTier(
        TierKernels{avx512::VecDotF32, avx512::VecDotF16, avx512::VecDotBf16,
                    avx512::VecDotQ4_0Q8_0, avx512::VecDotQ4_1Q8_1, avx512::VecDotQ5_0Q8_0,
                    avx512::VecDotQ5_1Q8_1, avx512::VecDotQ8_0Q8_0, avx512::VecDotQ4_KQ8_K,
                    avx512::VecDotQ5_KQ8_K, avx512::VecDotQ6_KQ8_K, avx512::DequantizeRowF16,
                    avx512::DequantizeRowBf16, avx512::QuantizeRowF16, avx512::QuantizeRowBf16,
                    avx512::QuantizeRowQ8_0, avx512::QuantizeRowQ8_1, avx512::QuantizeRowQ8_K});
#endif  // Elsewhere every tier is the references (HostIsa() is kScalar anyway).
    for (int tier = 0; tier < 3; ++tier) {
      for (const TypeTraits& t : tiers[tier].traits) {
        const int id = static_cast<int>(t.type);
        KVMESH_CHECK(id >= 0 && id < kMaxTypeId);
        by_id[tier][id] = &t;
      }
    }
  }
};

const Registry& GetRegistry() {
  static const Registry registry;
  return registry;
}

}  // namespace

const TypeTraits* GetTypeTraits(TensorType type, Isa isa) {
  const int id = static_cast<int>(type);
  if (id < 0 || id >= kMaxTypeId) return nullptr;
  return GetRegistry().by_id[static_cast<int>(isa)][id];
}

const TypeTraits* GetReferenceTypeTraits(TensorType type) {
  return GetTypeTraits(type, Isa::kScalar);
}

const TypeTraits* GetTypeTraits(TensorType type) {
  static const Isa active = ActiveIsa();
  return GetTypeTraits(type, active);
}

}  // namespace kvmesh::kernels
