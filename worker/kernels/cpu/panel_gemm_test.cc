// The panel layout and the panel GEMM kernels of every tier:
//  - packing then unpacking gives back every row's bytes;
//  - the scalar panel kernel equals the reference vec_dot (it is defined so);
//  - each SIMD kernel equals the scalar one bit for bit for the quantized
//    types, and to rounding for the float types;
//  - batch invariance: row r of a product over many tokens equals, bit for
//    bit, the product of that token alone, whatever the tile split.
#include "worker/kernels/cpu/panel_gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/panel_layout.h"
#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {
namespace {

using T = TensorType;

const T kWeightTypes[] = {T::kF32,  T::kF16,    T::kBF16,   T::kQ4_0,  T::kQ4_1,    T::kQ5_0,
                          T::kQ5_1, T::kQ8_0,   T::kQ4_K,   T::kQ5_K,  T::kQ6_K,    T::kQ2_K,
                          T::kQ3_K, T::kIQ4_NL, T::kIQ4_XS, T::kIQ3_S, T::kIQ3_XXS, T::kIQ2_XS};

bool IsFloat(T type) { return type == T::kF32 || type == T::kF16 || type == T::kBF16; }

bool IsLegacyBlockType(T type) {
  return type == T::kQ4_0 || type == T::kQ4_1 || type == T::kQ5_0 || type == T::kQ5_1 ||
         type == T::kQ8_0;
}

// A test problem: rows x cols weights of `type`, num_tokens activations.
struct Problem {
  T type;
  int64_t rows, cols, num_tokens;
  std::vector<float> w_float, x_float;
  std::vector<uint8_t> w_rows;  // GGUF layout
  std::vector<uint8_t> panels;  // panel layout
  std::vector<uint8_t> planar;  // planar activations
  PlanarLayout layout;

  Problem(T t, int64_t r, int64_t c, int64_t n, uint64_t seed)
      : type(t), rows(r), cols(c), num_tokens(n) {
    const TypeTraits& traits = *GetReferenceTypeTraits(type);
    const TypeTraits& x_traits = *GetReferenceTypeTraits(traits.vec_dot_type);
    TestRandom rng(seed);
    const size_t row_bytes = RowSizeBytes(traits, cols);
    w_rows.resize(row_bytes * rows);
    for (int64_t i = 0; i < rows; ++i) {
      const std::vector<float> row = MakeTestRow(rng, cols);
      traits.from_float(row.data(), w_rows.data() + i * row_bytes, cols);
    }
    panels.resize(PanelBytes(type, cols) * NumPanels(rows));
    PackPanels(type, w_rows.data(), row_bytes, rows, cols, 0, NumPanels(rows), panels.data());
    layout = GetPlanarLayout(traits.vec_dot_type, cols);
    planar.assign(layout.row_bytes * num_tokens, 0);
    std::vector<uint8_t> blocks(RowSizeBytes(x_traits, cols) + 8);
    for (int64_t t = 0; t < num_tokens; ++t) {
      const std::vector<float> x = MakeTestRow(rng, cols);
      x_traits.from_float(x.data(), blocks.data(), cols);
      BlocksToPlanar(layout, blocks.data(), planar.data() + t * layout.row_bytes);
    }
  }

  // Runs `gemm` over panels [p0, p1) and tokens [t0, t1) into a full-size
  // output (NaN where not computed).
  std::vector<float> Run(PanelGemmFn gemm, int64_t p0, int64_t p1, int64_t t0, int64_t t1) const {
    const int64_t padded = NumPanels(rows) * kPanelRows;
    std::vector<float> y(padded * num_tokens, std::nanf(""));
    PanelGemmArgs a;
    a.panels = panels.data() + p0 * PanelBytes(type, cols);
    a.num_panels = p1 - p0;
    a.cols = cols;
    a.x = planar.data() + t0 * layout.row_bytes;
    a.x_stride = layout.row_bytes;
    a.num_tokens = t1 - t0;
    a.y = y.data() + t0 * padded + p0 * kPanelRows;
    a.y_stride = padded;
    gemm(a);
    return y;
  }
  std::vector<float> RunAll(PanelGemmFn gemm) const {
    return Run(gemm, 0, NumPanels(rows), 0, num_tokens);
  }
};

int64_t ColsFor(T type) {
  if (IsFloat(type)) return 67;  // odd, and no multiple of any lane count
  return GetReferenceTypeTraits(type)->block_size == kSuperBlockSize ? 512 : 96;
}

std::string TypeName(const testing::TestParamInfo<T>& info) { return TensorTypeName(info.param); }

class PanelLayoutTest : public testing::TestWithParam<T> {};

TEST_P(PanelLayoutTest, PackThenUnpackGivesBackEveryRow) {
  const T type = GetParam();
  const Problem p(type, 37, ColsFor(type), 1, 1);
  const size_t row_bytes = RowSizeBytes(*GetReferenceTypeTraits(type), p.cols);
  ASSERT_EQ(NumPanels(37), 3);
  // BF16 pads K to even; IQ3_S's panels are expanded to 134 bytes per block.
  const size_t want = type == T::kBF16    ? 16 * 4 * 34u
                      : type == T::kIQ3_S ? static_cast<size_t>(kPanelRows) * row_bytes / 110 * 134
                                          : static_cast<size_t>(kPanelRows) * row_bytes;
  EXPECT_EQ(PanelBytes(type, p.cols), want);
  std::vector<uint8_t> row(row_bytes);
  for (int64_t i = 0; i < 48; ++i) {
    UnpackPanelRow(type, p.panels.data() + (i / 16) * PanelBytes(type, p.cols), p.cols,
                   static_cast<int>(i % 16), row.data());
    if (i < 37) {
      ASSERT_EQ(0, std::memcmp(row.data(), p.w_rows.data() + i * row_bytes, row_bytes)) << i;
    } else {
      for (uint8_t b : row) ASSERT_EQ(b, 0) << "padding row " << i;
    }
  }
}

TEST_P(PanelLayoutTest, PackingAPanelRangeMatchesPackingAll) {
  const T type = GetParam();
  const Problem p(type, 40, ColsFor(type), 1, 2);
  const size_t panel_bytes = PanelBytes(type, p.cols);
  std::vector<uint8_t> middle(panel_bytes);
  PackPanels(type, p.w_rows.data(), RowSizeBytes(*GetReferenceTypeTraits(type), p.cols), 40, p.cols,
             1, 2, middle.data());
  EXPECT_EQ(0, std::memcmp(middle.data(), p.panels.data() + panel_bytes, panel_bytes));
}

TEST_P(PanelLayoutTest, PlanarActivationsRoundTrip) {
  const T type = GetParam();
  const TypeTraits& traits = *GetReferenceTypeTraits(type);
  const TypeTraits& x_traits = *GetReferenceTypeTraits(traits.vec_dot_type);
  const int64_t n = ColsFor(type);
  TestRandom rng(5);
  const std::vector<float> x = MakeTestRow(rng, n);
  std::vector<uint8_t> blocks(RowSizeBytes(x_traits, n)), back(blocks.size());
  x_traits.from_float(x.data(), blocks.data(), n);
  const PlanarLayout layout = GetPlanarLayout(traits.vec_dot_type, n);
  EXPECT_EQ(layout.row_bytes % 64, 0u);
  std::vector<uint8_t> planar(layout.row_bytes);
  BlocksToPlanar(layout, blocks.data(), planar.data());
  PlanarToBlocks(layout, planar.data(), back.data());
  EXPECT_EQ(blocks, back);
}

TEST_P(PanelLayoutTest, ScalarKernelIsTheReferenceVecDot) {
  const T type = GetParam();
  const Problem p(type, 20, ColsFor(type), 3, 3);
  const std::vector<float> y = p.RunAll(GetPanelGemm(type, Isa::kScalar));
  const TypeTraits& traits = *GetReferenceTypeTraits(type);
  const TypeTraits& x_traits = *GetReferenceTypeTraits(traits.vec_dot_type);
  const size_t row_bytes = RowSizeBytes(traits, p.cols);
  std::vector<uint8_t> xb(RowSizeBytes(x_traits, p.cols));
  for (int64_t t = 0; t < 3; ++t) {
    PlanarToBlocks(p.layout, p.planar.data() + t * p.layout.row_bytes, xb.data());
    for (int64_t r = 0; r < 32; ++r) {
      const float want =
          r < 20 ? traits.vec_dot(p.cols, p.w_rows.data() + r * row_bytes, xb.data()) : 0.0f;
      ASSERT_EQ(y[t * 32 + r], want) << "token " << t << " row " << r;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, PanelLayoutTest, testing::ValuesIn(kWeightTypes), TypeName);

struct Case {
  T type;
  Isa isa;
};

std::string CaseName(const testing::TestParamInfo<Case>& info) {
  return TensorTypeName(info.param.type) + "_" + std::string(IsaName(info.param.isa));
}

std::vector<Case> AllCases() {
  std::vector<Case> cases;
  for (Isa isa : {Isa::kScalar, Isa::kAvx2, Isa::kAvx512}) {
    for (T type : kWeightTypes) cases.push_back({type, isa});
  }
  return cases;
}

class PanelGemmTest : public testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    if (!IsaSupported(GetParam().isa)) {
      GTEST_SKIP() << "this CPU lacks the " << IsaName(GetParam().isa) << " tier";
    }
  }
};

TEST_P(PanelGemmTest, MatchesTheScalarKernel) {
  const auto [type, isa] = GetParam();
  const Problem p(type, 45, ColsFor(type), 11, 10);
  const std::vector<float> want = p.RunAll(GetPanelGemm(type, Isa::kScalar));
  const std::vector<float> got = p.RunAll(GetPanelGemm(type, isa));
  ASSERT_EQ(want.size(), got.size());
  if (!IsFloat(type)) {
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0) << i << ": " << got[i] << " vs " << want[i];
    }
    return;
  }
  // Float types: the reference sums in double, the kernels in float.
  double worst = 0.0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double scale = std::sqrt(static_cast<double>(p.cols)) * 64.0;  // bound on sum |w x|
    const double error = std::fabs(static_cast<double>(want[i]) - got[i]) / scale;
    worst = std::max(worst, error);
  }
  EXPECT_LT(worst, 1e-5);
}

TEST_P(PanelGemmTest, EveryTokenGetsTheSameBitsAloneAsInABatch) {
  const auto [type, isa] = GetParam();
  const PanelGemmFn gemm = GetPanelGemm(type, isa);
  for (int64_t num_tokens : {int64_t{1}, int64_t{3}, int64_t{13}, int64_t{20}}) {
    const Problem p(type, 33, ColsFor(type), num_tokens, 20 + num_tokens);
    const std::vector<float> batch = p.RunAll(gemm);
    const int64_t panels = NumPanels(p.rows);
    for (int64_t t = 0; t < num_tokens; ++t) {
      const std::vector<float> alone = p.Run(gemm, 0, panels, t, t + 1);
      // ... and each panel alone, as a thread computing a slice would.
      const std::vector<float> slice = p.Run(gemm, 1, 2, t, t + 1);
      for (int64_t r = 0; r < panels * kPanelRows; ++r) {
        const int64_t i = t * panels * kPanelRows + r;
        ASSERT_EQ(std::memcmp(&batch[i], &alone[i], 4), 0)
            << num_tokens << " tokens, token " << t << " row " << r;
        if (r / kPanelRows == 1) {
          ASSERT_EQ(std::memcmp(&batch[i], &slice[i], 4), 0) << r;
        }
      }
    }
  }
}

#ifdef KVMESH_X86_SIMD
// The AVX512_BF16 instruction applies a pair odd element first; the other
// BF16 kernels do the same, so with normal numbers they agree bit for bit.
TEST(PanelGemmBf16Test, NativeInstructionMatchesTheEmulatedOrder) {
  if (!HasAvx512Bf16()) GTEST_SKIP() << "this CPU lacks AVX512_BF16";
  const Problem p(T::kBF16, 48, 130, 9, 77);
  const std::vector<float> native = p.RunAll(kBF16Avx512Bf16.gemm);
  const std::vector<float> emulated = p.RunAll(kBF16Avx512.gemm);
  const std::vector<float> avx2 = p.RunAll(kBF16Avx2.gemm);
  for (size_t i = 0; i < native.size(); ++i) {
    ASSERT_EQ(std::memcmp(&native[i], &emulated[i], 4), 0) << i;
    ASSERT_EQ(std::memcmp(&native[i], &avx2[i], 4), 0) << i;
  }
}

// The AMX kernels, each with its type; tests skip (saying so) without AMX.
class PanelGemmAmxTest : public testing::Test {
 protected:
  struct Kernel {
    T type;
    PanelGemmFn gemm;
  };
  // Every amx record of type_list.h.
  static std::vector<Kernel> AmxKernels() {
    std::vector<Kernel> kernels;
#define KVMESH_AMX_KERNEL(Name, avx2, avx512, avx512bf16, amx, ...) \
  KVMESH_IF_##amx(kernels.push_back({T::k##Name, k##Name##Amx.gemm});)
    KVMESH_CPU_TYPE_LIST(KVMESH_AMX_KERNEL)
#undef KVMESH_AMX_KERNEL
    return kernels;
  }

  void SetUp() override {
    if (!HasAmx()) GTEST_SKIP() << "this CPU or OS gives no AMX tile unit";
  }

  // `gemm` gives the scalar kernel's bits on p.
  static void ExpectScalarBits(const Problem& p, PanelGemmFn gemm) {
    const std::vector<float> want = p.RunAll(GetPanelGemm(p.type, Isa::kScalar));
    const std::vector<float> got = p.RunAll(gemm);
    ASSERT_EQ(want.size(), got.size());
    for (size_t i = 0; i < want.size(); ++i) {
      ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0)
          << TensorTypeName(p.type) << ", " << p.num_tokens << " tokens, " << p.cols
          << " columns, output " << i << ": " << got[i] << " vs " << want[i];
    }
  }
};

// The AMX kernels take the tokens in tiles of 16 and hand the rest to the
// AVX-512 kernel (and all of them when K is no whole number of the kernel's
// units: 160 is not, for the 32-element types); every token count must give
// the scalar kernel's bits.
TEST_F(PanelGemmAmxTest, MatchesTheScalarKernelForEveryTokenCount) {
  for (const auto& [type, gemm] : AmxKernels()) {
    for (int64_t num_tokens : {int64_t{16}, int64_t{17}, int64_t{35}, int64_t{48}}) {
      const int64_t cols = num_tokens == 17 && IsLegacyBlockType(type) ? 160 : 768;
      ExpectScalarBits(Problem(type, 40, cols, num_tokens, 90 + num_tokens), gemm);
    }
  }
}

// The AMX kernels turn levels into signed bytes and (K-quants) multiply scale
// digits into them: every scale and level value and extreme activations must
// still give the scalar kernel's bits. Weights here are random bytes (every
// bit pattern is a valid level and scale; Q6_K rows also go through all 256
// scale bytes) with the quantizer's d; activations include rows of +-max, so
// the products reach their largest magnitudes.
TEST_F(PanelGemmAmxTest, MatchesTheScalarKernelAtTheExtremes) {
  for (const auto& [type, gemm] : AmxKernels()) {
    Problem p(type, 32, 512, 32, 5);
    const TypeTraits& traits = *GetReferenceTypeTraits(type);
    const size_t row_bytes = RowSizeBytes(traits, p.cols);
    const size_t block_bytes = traits.bytes_per_block;
    TestRandom rng(6);
    for (size_t i = 0; i < p.w_rows.size(); ++i) {
      const size_t in_block = i % block_bytes;
      // d (and dmin) stay: they are the first 4 bytes of Q4_K / Q5_K blocks
      // and the last 2 of Q6_K blocks.
      const bool scale_factor = type == T::kQ6_K ? in_block >= block_bytes - 2 : in_block < 4;
      if (!scale_factor) p.w_rows[i] = static_cast<uint8_t>(rng.NextBits());
    }
    if (type == T::kQ6_K) {
      for (int64_t r = 0; r < p.rows; ++r) {
        auto* block = reinterpret_cast<BlockQ6_K*>(p.w_rows.data() + r * row_bytes);
        for (int j = 0; j < 16; ++j) block->scales[j] = static_cast<int8_t>(16 * (r % 16) + j);
      }
    }
    PackPanels(type, p.w_rows.data(), row_bytes, p.rows, p.cols, 0, NumPanels(p.rows),
               p.panels.data());
    const TypeTraits& x_traits = *GetReferenceTypeTraits(traits.vec_dot_type);
    std::vector<uint8_t> blocks(RowSizeBytes(x_traits, p.cols) + 8);
    for (int64_t t = 0; t < p.num_tokens; ++t) {
      std::vector<float> x(p.cols);
      for (int64_t i = 0; i < p.cols; ++i) {
        switch (t % 4) {
          case 0:
            x[i] = 1.0f;
            break;
          case 1:
            x[i] = -1.0f;
            break;
          case 2:
            x[i] = i % 2 == 0 ? 1.0f : -1.0f;
            break;
          default:
            x[i] = rng.Bell();
            break;
        }
      }
      x_traits.from_float(x.data(), blocks.data(), p.cols);
      BlocksToPlanar(p.layout, blocks.data(), p.planar.data() + t * p.layout.row_bytes);
    }
    ExpectScalarBits(p, gemm);
  }
}
#endif

// The low-bit and table types' kernels decode packed scales, split bits and
// look values up: with random bytes every scale, min, level and code value
// occurs, and +-1 activations drive the integer sums to their largest
// magnitudes; each tier must still give the scalar kernel's bits. The f16
// super-scales stay ordinary numbers.
class RandomBytesGemmTest : public PanelGemmTest {};

TEST_P(RandomBytesGemmTest, MatchesTheScalarKernel) {
  const auto [type, isa] = GetParam();
  struct HalfFields {
    T type;
    size_t first, count;  // byte offset of the f16 fields in a block, and how many
  };
  const HalfFields fields[] = {{T::kQ2_K, 80, 2},  {T::kQ3_K, 108, 1}, {T::kIQ4_NL, 0, 1},
                               {T::kIQ4_XS, 0, 1}, {T::kIQ3_S, 0, 1},  {T::kIQ3_XXS, 0, 1},
                               {T::kIQ2_XS, 0, 1}};
  const HalfFields* f = nullptr;
  for (const HalfFields& h : fields) {
    if (h.type == type) f = &h;
  }
  ASSERT_NE(f, nullptr) << TensorTypeName(type);
  Problem p(type, 40, ColsFor(type), 13, 7);
  const TypeTraits& traits = *GetReferenceTypeTraits(type);
  const size_t row_bytes = RowSizeBytes(traits, p.cols);
  TestRandom rng(8);
  for (size_t i = 0; i < p.w_rows.size(); ++i) p.w_rows[i] = static_cast<uint8_t>(rng.NextBits());
  for (size_t b = 0; b < p.w_rows.size() / traits.bytes_per_block; ++b) {
    for (size_t k = 0; k < f->count; ++k) {
      const uint16_t half =
          static_cast<uint16_t>(0x3000 + (rng.NextBits() & 0x3FF));  // 0.125..0.25
      std::memcpy(p.w_rows.data() + b * traits.bytes_per_block + f->first + 2 * k, &half, 2);
    }
  }
  PackPanels(type, p.w_rows.data(), row_bytes, p.rows, p.cols, 0, NumPanels(p.rows),
             p.panels.data());
  const TypeTraits& x_traits = *GetReferenceTypeTraits(traits.vec_dot_type);
  std::vector<uint8_t> blocks(RowSizeBytes(x_traits, p.cols) + 8);
  for (int64_t t = 0; t < p.num_tokens; ++t) {
    std::vector<float> x(p.cols);
    for (int64_t i = 0; i < p.cols; ++i) {
      x[i] = t % 3 == 0 ? 1.0f : t % 3 == 1 ? -1.0f : (i % 2 == 0 ? 1.0f : -1.0f);
    }
    x_traits.from_float(x.data(), blocks.data(), p.cols);
    BlocksToPlanar(p.layout, blocks.data(), p.planar.data() + t * p.layout.row_bytes);
  }
  const std::vector<float> want = p.RunAll(GetPanelGemm(type, Isa::kScalar));
  const std::vector<float> got = p.RunAll(GetPanelGemm(type, isa));
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(std::memcmp(&want[i], &got[i], 4), 0) << i << ": " << got[i] << " vs " << want[i];
  }
}

INSTANTIATE_TEST_SUITE_P(EveryTier, PanelGemmTest, testing::ValuesIn(AllCases()), CaseName);

std::vector<Case> LowBitCases() {
  std::vector<Case> cases;
  for (Isa isa : {Isa::kAvx2, Isa::kAvx512}) {
    for (T type :
         {T::kQ2_K, T::kQ3_K, T::kIQ4_NL, T::kIQ4_XS, T::kIQ3_S, T::kIQ3_XXS, T::kIQ2_XS}) {
      cases.push_back({type, isa});
    }
  }
  return cases;
}
INSTANTIATE_TEST_SUITE_P(LowBitTypes, RandomBytesGemmTest, testing::ValuesIn(LowBitCases()),
                         CaseName);

}  // namespace
}  // namespace kvmesh::kernels
