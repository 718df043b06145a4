// The records the CPU dispatch tables are built from: one per (tensor type,
// kernel tier), defined with designated initializers in that pair's own file
// (types/<type>_<tier>.cc) and declared here for every entry of type_list.h.
// The tables (GetTypeTraits, GetPanelGemm, GetKvRowKernels) are the public
// interface; records are for the tables and for tests naming one variant.
//
// Why two swapped entries do not compile:
//  - a record's type and tier are template arguments, part of its C++ type:
//    kQ4_0Avx2 must be defined as a TierRecord<TensorType::kQ4_0, Tier::kAvx2>,
//    or its definition conflicts with the declaration below;
//  - fields are set by name, and C++ rejects designators out of declaration
//    order (and function pointers of the wrong kind);
//  - a table takes each record's slot from its type (SlotOf), never from a
//    position;
//  - the functions a record names have internal linkage in its file, so no
//    other type's file can pick them up.
//
// Contracts of the functions (those of the references, reference_kernels.h,
// and of PanelGemmFn, panel_gemm.h):
//  - quantizers (from_float) write exactly the bytes the reference writes;
//  - vec_dot of the quantized types returns exactly the reference's value;
//  - vec_dot of F32/F16/BF16 accumulates in float lanes (the reference sums
//    in double), so they agree to rounding;
//  - gemm follows panel_gemm.h; the avx512bf16 and amx gemms give the same bits
//    as the avx512 one and are picked where HasAvx512Bf16() / HasAmx();
//  - KV row and block kernels: kv_row_kernels.h.
// A function may only be called where its tier is supported (cpu_features.h).
// Records are constant-initialized (constinit) and immutable.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tensor_type.h"
#include "worker/kernels/cpu/cpu_features.h"
#include "worker/kernels/cpu/kv_row_kernels.h"
#include "worker/kernels/cpu/panel_gemm.h"
#include "worker/kernels/cpu/type_list.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {

// The tier of a record. kAvx512Bf16 and kAmx are parts of the AVX-512 tier
// (Isa::kAvx512) that also need AVX512_BF16 or the AMX tile unit.
enum class Tier : int { kScalar, kAvx2, kAvx512, kAvx512Bf16, kAmx };

// types/<type>.cc: geometry, vec_dot pairing and scalar references - what
// GetReferenceTypeTraits(kType) returns. vec_dot stays null for the
// activation-only types.
template <TensorType kType>
struct TypeRecord {
  static constexpr TensorType type = kType;
  TensorType vec_dot_type;
  int64_t block_size;      // elements per block
  size_t bytes_per_block;  // bytes per block
  ToFloatFn to_float;
  FromFloatFn from_float;
  VecDotFn vec_dot = nullptr;
};

// types/<type>_<tier>.cc: the kernels one SIMD tier has for the type. A null
// field keeps the next narrower tier's function.
template <TensorType kType, Tier kTier>
struct TierRecord {
  static constexpr TensorType type = kType;
  static constexpr Tier tier = kTier;
  ToFloatFn to_float = nullptr;
  FromFloatFn from_float = nullptr;
  VecDotFn vec_dot = nullptr;
  PanelGemmFn gemm = nullptr;
};

// types/<type>_kv_<isa>.cc: KV row kernels (KvRowKernels) of one ISA.
template <TensorType kType, Isa kIsa>
struct KvRowRecord {
  static constexpr TensorType type = kType;
  static constexpr Isa isa = kIsa;
  VecDotFn dot;
  KvAccumulateFn accumulate;
};

// types/<type>_kv_blocks_<isa>.cc: KV block kernels (KvBlockKernels) of one ISA.
template <TensorType kType, Isa kIsa>
struct KvBlockRecord {
  static constexpr TensorType type = kType;
  static constexpr Isa isa = kIsa;
  decltype(KvBlockKernels::scores) scores;
  decltype(KvBlockKernels::weighted_sum) weighted_sum;
};

// The ISA a tier's functions need (cpu_features.h).
constexpr Isa IsaOf(Tier tier) {
  switch (tier) {
    case Tier::kScalar:
      return Isa::kScalar;
    case Tier::kAvx2:
      return Isa::kAvx2;
    case Tier::kAvx512:
    case Tier::kAvx512Bf16:
    case Tier::kAmx:
      break;
  }
  return Isa::kAvx512;
}

// Type ids index the tables; every listed type's id is below this.
inline constexpr int kMaxTypeId = 64;

// The slot of `record` in a table indexed by type id, which must be kSlot's:
// a record of another type in this slot does not compile.
template <TensorType kSlot, typename Record>
constexpr int SlotOf(const Record& /*record*/) {
  static_assert(Record::type == kSlot, "a record in the table slot of another type");
  static_assert(static_cast<int>(kSlot) < kMaxTypeId);
  return static_cast<int>(kSlot);
}

// clang-format off
#define KVMESH_DECLARE_RECORDS(Name, avx2, avx512, avx512bf16, amx, kv, kv_avx2, kv_avx512,   \
                               kv_blocks, kv_blocks_avx2)                                     \
  extern const TypeRecord<TensorType::k##Name> k##Name##Scalar;                               \
  KVMESH_IF_##avx2(                                                                           \
      extern const TierRecord<TensorType::k##Name, Tier::kAvx2> k##Name##Avx2;)               \
  KVMESH_IF_##avx512(                                                                         \
      extern const TierRecord<TensorType::k##Name, Tier::kAvx512> k##Name##Avx512;)           \
  KVMESH_IF_##avx512bf16(                                                                     \
      extern const TierRecord<TensorType::k##Name, Tier::kAvx512Bf16> k##Name##Avx512Bf16;)   \
  KVMESH_IF_##amx(                                                                            \
      extern const TierRecord<TensorType::k##Name, Tier::kAmx> k##Name##Amx;)                 \
  KVMESH_IF_##kv_avx2(                                                                        \
      extern const KvRowRecord<TensorType::k##Name, Isa::kAvx2> k##Name##KvAvx2;)             \
  KVMESH_IF_##kv_avx512(                                                                      \
      extern const KvRowRecord<TensorType::k##Name, Isa::kAvx512> k##Name##KvAvx512;)         \
  KVMESH_IF_##kv_blocks(                                                                      \
      extern const KvBlockRecord<TensorType::k##Name, Isa::kAvx512> k##Name##KvBlocksAvx512;)   \
  KVMESH_IF_##kv_blocks_avx2(                                                                 \
      extern const KvBlockRecord<TensorType::k##Name, Isa::kAvx2> k##Name##KvBlocksAvx2;)
// clang-format on

KVMESH_CPU_TYPE_LIST(KVMESH_DECLARE_RECORDS)
#undef KVMESH_DECLARE_RECORDS

}  // namespace kvmesh::kernels
