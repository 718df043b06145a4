#include "worker/kernels/cpu/type_traits.h"

#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/type_list.h"

namespace kvmesh::kernels {
namespace {

constexpr int kNumIsas = 3;

// Every tier's table, indexed by type id for the hot paths (attention looks
// its types up per query). Built once from the records of type_list.h.
class Registry {
 public:
  Registry() {
#define KVMESH_ADD_REFERENCES(Name, ...) \
  AddType(SlotOf<TensorType::k##Name>(k##Name##Scalar), k##Name##Scalar);
    KVMESH_CPU_TYPE_LIST(KVMESH_ADD_REFERENCES)
#undef KVMESH_ADD_REFERENCES
#ifdef KVMESH_X86_SIMD  // Elsewhere every tier is the references (HostIsa() is kScalar anyway).
                        // clang-format off
#define KVMESH_ADD_TIERS(Name, avx2, avx512, ...)                                           \
  KVMESH_IF_##avx2(AddTier(SlotOf<TensorType::k##Name>(k##Name##Avx2), k##Name##Avx2);)     \
  KVMESH_IF_##avx512(AddTier(SlotOf<TensorType::k##Name>(k##Name##Avx512), k##Name##Avx512);)
                        // clang-format on
    KVMESH_CPU_TYPE_LIST(KVMESH_ADD_TIERS)
#undef KVMESH_ADD_TIERS
#endif
  }

  const TypeTraits* Find(int id, Isa isa) const {
    return present_[id] ? &traits_[static_cast<int>(isa)][id] : nullptr;
  }

 private:
  // The references, in every tier's table.
  template <TensorType kType>
  void AddType(int slot, const TypeRecord<kType>& record) {
    for (TypeTraits* tier : traits_) {
      tier[slot] = {.type = kType,
                    .vec_dot_type = record.vec_dot_type,
                    .block_size = record.block_size,
                    .bytes_per_block = record.bytes_per_block,
                    .to_float = record.to_float,
                    .from_float = record.from_float,
                    .vec_dot = record.vec_dot};
    }
    present_[slot] = true;
  }

  // A tier's kernels, in its table and the wider tiers' (whose own records,
  // added after, replace them where they have a kernel).
  template <TensorType kType, Tier kTier>
  void AddTier(int slot, const TierRecord<kType, kTier>& record) {
    static_assert(kTier == Tier::kAvx2 || kTier == Tier::kAvx512);
    for (int isa = static_cast<int>(IsaOf(kTier)); isa < kNumIsas; ++isa) {
      TypeTraits& traits = traits_[isa][slot];
      if (record.to_float != nullptr) traits.to_float = record.to_float;
      if (record.from_float != nullptr) traits.from_float = record.from_float;
      if (record.vec_dot != nullptr) traits.vec_dot = record.vec_dot;
    }
  }

  TypeTraits traits_[kNumIsas][kMaxTypeId] = {};
  bool present_[kMaxTypeId] = {};
};

const Registry& GetRegistry() {
  static const Registry registry;
  return registry;
}

}  // namespace

const TypeTraits* GetTypeTraits(TensorType type, Isa isa) {
  const int id = static_cast<int>(type);
  if (id < 0 || id >= kMaxTypeId) return nullptr;
  return GetRegistry().Find(id, isa);
}

const TypeTraits* GetReferenceTypeTraits(TensorType type) {
  return GetTypeTraits(type, Isa::kScalar);
}

const TypeTraits* GetTypeTraits(TensorType type) {
  static const Isa active = ActiveIsa();
  return GetTypeTraits(type, active);
}

}  // namespace kvmesh::kernels
