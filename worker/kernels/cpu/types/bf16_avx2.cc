// BF16 on the AVX2 tier: panel GEMM, single-row dot product and the exact
// conversions. The GEMM applies each element pair odd element first, as the
// AVX-512 tier does (see bf16_avx512.cc).
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/avx2_float.h"

namespace kvmesh::kernels::avx2 {
namespace {

inline __m256 EvenHalves(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
inline __m256 OddHalves(__m256i v) {
  return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u))));
}

struct Bf16Pair {
  __m256 even, odd;
};

struct Bf16 {
  static constexpr size_t kStepBytes = 64;
  static constexpr int kStepElems = 2;
  static constexpr size_t kXBytes = 4;
  static Bf16Pair Load(const uint8_t* p, int half) {
    const __m256i v = Load256(p + 32 * half);
    return {EvenHalves(v), OddHalves(v)};
  }
  static __m256 Accumulate(__m256 acc, const Bf16Pair& w, const uint8_t* xp) {
    const __m256i xv = _mm256_set1_epi32(LoadI32(xp));
    acc = _mm256_fmadd_ps(w.odd, OddHalves(xv), acc);
    return _mm256_fmadd_ps(w.even, EvenHalves(xv), acc);
  }
};

__m256 LoadBf16(const uint16_t* p, int count) {
  __m128i raw;
  if (count == 8) {
    raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  } else {
    alignas(32) uint8_t buffer[32];
    CopyTail(p, count, 2, buffer);
    raw = _mm_load_si128(reinterpret_cast<const __m128i*>(buffer));
  }
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(raw), 16));
}

uint16_t FloatToBf16Bits(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 64u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

void GemmBf16(const PanelGemmArgs& args) { FloatGemm<Bf16>(args); }

float VecDotBf16(int64_t n, const void* w, const void* x) {
  const uint16_t* wb = static_cast<const uint16_t*>(w);
  const uint16_t* xb = static_cast<const uint16_t*>(x);
  return DotFloatLanes(n, [&](int64_t i, int count, __m256* wv, __m256* xv) {
    *wv = LoadBf16(wb + i, count);
    *xv = LoadBf16(xb + i, count);
  });
}

void QuantizeRowBf16(const float* src, void* dst, int64_t n) {
  uint16_t* out = static_cast<uint16_t*>(dst);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff);
  const __m256i inf = _mm256_set1_epi32(0x7f800000);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i bits = _mm256_castps_si256(_mm256_loadu_ps(src + i));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_srli_epi32(
        _mm256_add_epi32(bits, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)), 16);
    const __m256i quiet_nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(64));
    // Signed compare is right here: both sides are below 2^31.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(bits, abs_mask), inf);
    const __m256i result = _mm256_blendv_epi8(rounded, quiet_nan, nan);
    const __m128i packed =
        _mm_packus_epi32(_mm256_castsi256_si128(result), _mm256_extracti128_si256(result, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), packed);
  }
  for (; i < n; ++i) out[i] = FloatToBf16Bits(src[i]);
}

void DequantizeRowBf16(const void* src, float* dst, int64_t n) {
  const uint16_t* in = static_cast<const uint16_t*>(src);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(dst + i, LoadBf16(in + i, 8));
  for (; i < n; ++i) {
    const uint32_t bits = static_cast<uint32_t>(in[i]) << 16;
    std::memcpy(dst + i, &bits, 4);
  }
}

}  // namespace
}  // namespace kvmesh::kernels::avx2

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kBF16, Tier::kAvx2> kBF16Avx2 = {
    .to_float = avx2::DequantizeRowBf16,
    .from_float = avx2::QuantizeRowBf16,
    .vec_dot = avx2::VecDotBf16,
    .gemm = avx2::GemmBf16,
};

}  // namespace kvmesh::kernels
