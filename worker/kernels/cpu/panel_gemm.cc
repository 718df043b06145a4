#include "worker/kernels/cpu/panel_gemm.h"

#include <vector>

#include "common/check.h"
#include "worker/kernels/cpu/panel_layout.h"
#include "worker/kernels/cpu/simd_kernels.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {
namespace {

using T = TensorType;

template <T kType>
void Reference(const PanelGemmArgs& args) {
  PanelGemmReference(kType, args);
}

struct TierGemms {
  PanelGemmFn f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k;

  PanelGemmFn For(T type) const {
    switch (type) {
      case T::kF32:
        return f32;
      case T::kF16:
        return f16;
      case T::kBF16:
        return bf16;
      case T::kQ4_0:
        return q4_0;
      case T::kQ4_1:
        return q4_1;
      case T::kQ5_0:
        return q5_0;
      case T::kQ5_1:
        return q5_1;
      case T::kQ8_0:
        return q8_0;
      case T::kQ4_K:
        return q4_k;
      case T::kQ5_K:
        return q5_k;
      case T::kQ6_K:
        return q6_k;
      default:
        return nullptr;
    }
  }
};

constexpr TierGemms kScalar = {Reference<T::kF32>,  Reference<T::kF16>,  Reference<T::kBF16>,
                               Reference<T::kQ4_0>, Reference<T::kQ4_1>, Reference<T::kQ5_0>,
                               Reference<T::kQ5_1>, Reference<T::kQ8_0>, Reference<T::kQ4_K>,
                               Reference<T::kQ5_K>, Reference<T::kQ6_K>};

#ifdef KVMESH_X86_SIMD
constexpr TierGemms kAvx2 = {avx2::GemmF32,  avx2::GemmF16,  avx2::GemmBf16, avx2::GemmQ4_0,
                             avx2::GemmQ4_1, avx2::GemmQ5_0, avx2::GemmQ5_1, avx2::GemmQ8_0,
                             avx2::GemmQ4_K, avx2::GemmQ5_K, avx2::GemmQ6_K};

constexpr TierGemms kAvx512 = {avx512::GemmF32,  avx512::GemmF16,  avx512::GemmBf16,
                               avx512::GemmQ4_0, avx512::GemmQ4_1, avx512::GemmQ5_0,
                               avx512::GemmQ5_1, avx512::GemmQ8_0, avx512::GemmQ4_K,
                               avx512::GemmQ5_K, avx512::GemmQ6_K};
// The AVX-512 tier's kernels that use the AMX tile unit where HasAmx().
constexpr TierGemms kAmx = {nullptr,       nullptr,       nullptr,      amx::GemmQ4_0,
                            nullptr,       amx::GemmQ5_0, nullptr,      amx::GemmQ8_0,
                            amx::GemmQ4_K, amx::GemmQ5_K, amx::GemmQ6_K};
#else
constexpr TierGemms kAvx2 = kScalar;  // never chosen: HostIsa() is kScalar
constexpr TierGemms kAvx512 = kScalar;
#endif

}  // namespace

PanelGemmFn GetPanelGemm(TensorType type, Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return kScalar.For(type);
    case Isa::kAvx2:
      return kAvx2.For(type);
    case Isa::kAvx512:
#ifdef KVMESH_X86_SIMD
      if (type == T::kBF16 && HasAvx512Bf16()) return avx512::GemmBf16Native;
      if (HasAmx() && kAmx.For(type) != nullptr) return kAmx.For(type);
#endif
      return kAvx512.For(type);
  }
  return nullptr;
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
