#include "worker/kernels/cpu/panel_gemm.h"

#include <vector>

#include "common/check.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/panel_layout.h"
#include "worker/kernels/cpu/type_list.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {
namespace {

constexpr int kNumIsas = 3;

template <TensorType kType>
void Reference(const PanelGemmArgs& args) {
  PanelGemmReference(kType, args);
}

// The kernels of every tier, indexed by type id, built once from the records
// of type_list.h. A tier without its own kernel for a type keeps the next
// narrower tier's.
class GemmTable {
 public:
  GemmTable() {
#define KVMESH_ADD_REFERENCE(Name, ...) AddReference<TensorType::k##Name>();
    KVMESH_CPU_TYPE_LIST(KVMESH_ADD_REFERENCE)
#undef KVMESH_ADD_REFERENCE
#ifdef KVMESH_X86_SIMD  // Elsewhere every tier is the scalar kernel (HostIsa() is kScalar).
                        // clang-format off
#define KVMESH_ADD_TIERS(Name, avx2, avx512, avx512bf16, amx, ...)                                \
  KVMESH_IF_##avx2(Add(SlotOf<TensorType::k##Name>(k##Name##Avx2), k##Name##Avx2);)               \
  KVMESH_IF_##avx512(Add(SlotOf<TensorType::k##Name>(k##Name##Avx512), k##Name##Avx512);)         \
  KVMESH_IF_##avx512bf16(Add(SlotOf<TensorType::k##Name>(k##Name##Avx512Bf16),                    \
                             k##Name##Avx512Bf16);)                                               \
  KVMESH_IF_##amx(Add(SlotOf<TensorType::k##Name>(k##Name##Amx), k##Name##Amx);)
                        // clang-format on
    KVMESH_CPU_TYPE_LIST(KVMESH_ADD_TIERS)
#undef KVMESH_ADD_TIERS
#endif
  }

  PanelGemmFn Find(int id, Isa isa) const {
    if (isa == Isa::kAvx512) {
      if (HasAvx512Bf16() && avx512_bf16_[id] != nullptr) return avx512_bf16_[id];
      if (HasAmx() && amx_[id] != nullptr) return amx_[id];
    }
    return tiers_[static_cast<int>(isa)][id];
  }

 private:
  // The scalar kernel, for every type with a panel layout, in every tier.
  template <TensorType kType>
  void AddReference() {
    if (!HasPanelLayout(kType)) return;
    for (PanelGemmFn* tier : tiers_) tier[static_cast<int>(kType)] = Reference<kType>;
  }

  template <TensorType kType, Tier kTier>
  void Add(int slot, const TierRecord<kType, kTier>& record) {
    if (record.gemm == nullptr) return;
    switch (kTier) {
      case Tier::kScalar:
        break;
      case Tier::kAvx2:
      case Tier::kAvx512:
        for (int isa = static_cast<int>(IsaOf(kTier)); isa < kNumIsas; ++isa) {
          tiers_[isa][slot] = record.gemm;
        }
        break;
      case Tier::kAvx512Bf16:
        avx512_bf16_[slot] = record.gemm;
        break;
      case Tier::kAmx:
        amx_[slot] = record.gemm;
        break;
    }
  }

  PanelGemmFn tiers_[kNumIsas][kMaxTypeId] = {};
  // Parts of the AVX-512 tier, where HasAvx512Bf16() / HasAmx().
  PanelGemmFn avx512_bf16_[kMaxTypeId] = {};
  PanelGemmFn amx_[kMaxTypeId] = {};
};

}  // namespace

PanelGemmFn GetPanelGemm(TensorType type, Isa isa) {
  static const GemmTable table;
  const int id = static_cast<int>(type);
  if (id < 0 || id >= kMaxTypeId) return nullptr;
  return table.Find(id, isa);
}

void PanelGemmReference(TensorType type, const PanelGemmArgs& args) {
  const TypeTraits* traits = GetReferenceTypeTraits(type);
  KVMESH_CHECK(traits != nullptr && traits->vec_dot != nullptr && HasPanelLayout(type));
  const TypeTraits* x_traits = GetReferenceTypeTraits(traits->vec_dot_type);
  const PlanarLayout layout = GetPlanarLayout(traits->vec_dot_type, args.cols);
  const size_t x_row_bytes = RowSizeBytes(*x_traits, args.cols);
  std::vector<uint8_t> x_blocks(x_row_bytes * static_cast<size_t>(args.num_tokens) + 8);
  for (int64_t t = 0; t < args.num_tokens; ++t) {
    PlanarToBlocks(layout, args.x + t * args.x_stride, x_blocks.data() + t * x_row_bytes);
  }
  const size_t panel_bytes = PanelBytes(type, args.cols);
  std::vector<uint8_t> row(RowSizeBytes(*traits, args.cols) + 8);
  for (int64_t p = 0; p < args.num_panels; ++p) {
    for (int r = 0; r < kPanelRows; ++r) {
      UnpackPanelRow(type, args.panels + p * panel_bytes, args.cols, r, row.data());
      for (int64_t t = 0; t < args.num_tokens; ++t) {
        args.y[t * args.y_stride + p * kPanelRows + r] =
            traits->vec_dot(args.cols, row.data(), x_blocks.data() + t * x_row_bytes);
      }
    }
  }
}

}  // namespace kvmesh::kernels
