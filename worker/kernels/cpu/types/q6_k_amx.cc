// Q6_K with the AMX tile unit: see amx_kquant.h.
//
// Levels are signed here, q = level - 32 in [-32, 31], and each signed 8-bit
// sub-block scale is split into three digits in [-3, 4] (base 8):
// s = d0 + 8 d1 + 64 d2. Then |q * d| <= 128 fits a signed byte (4 * -32 is
// the one -128), and scaled = C0 + 8 C1 + 64 C2 with tdpbssd products.
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/amx_kquant.h"

namespace kvmesh::kernels::amx {
namespace {

struct Q6K : KQuantPolicy<3, true> {
  static constexpr size_t kUnitBytes = 16 * 210;

  struct Block {
    __m512 dw;
  };

  // q * d for a digit d in [-3, 4] of each row: the sum of q, 2q and 4q as
  // the bits of |d| pick them, negated where d < 0. Every partial sum is a
  // byte: |q + 2q| <= 96, and 4q stands alone.
  struct DigitMasks {
    __mmask64 one, two, four, negative;
  };

  __m512i low_byte_to_lane;  // byte 0 of each 32-bit lane into all four

  Q6K() {
    alignas(64) uint8_t control[64];
    for (int i = 0; i < 64; ++i) control[i] = static_cast<uint8_t>(i / 4 * 4 % 16);
    low_byte_to_lane = _mm512_load_si512(control);
  }

  static __m512i Times(__m512i q, __m512i q2, __m512i q4, const DigitMasks& m) {
    __m512i r = _mm512_maskz_mov_epi8(m.one, q);
    r = _mm512_mask_add_epi8(r, m.two, r, q2);
    r = _mm512_mask_add_epi8(r, m.four, r, q4);
    return _mm512_mask_sub_epi8(r, m.negative, _mm512_setzero_si512(), r);
  }

  // The byte masks of digit d (int32 per row lane, in [-3, 4]).
  DigitMasks Masks(__m512i d) const {
    const __m512i bytes = _mm512_shuffle_epi8(d, low_byte_to_lane);
    const __m512i magnitude = _mm512_abs_epi8(bytes);
    return {_mm512_test_epi8_mask(magnitude, _mm512_set1_epi8(1)),
            _mm512_test_epi8_mask(magnitude, _mm512_set1_epi8(2)),
            _mm512_test_epi8_mask(magnitude, _mm512_set1_epi8(4)), _mm512_movepi8_mask(bytes)};
  }

  void Prepare(const uint8_t* pb, WeightOperands<3>* w, Block* b) const {
    const __m512i three = _mm512_set1_epi32(3);
    const __m512i seven = _mm512_set1_epi32(7);
    const __m512i offset = _mm512_set1_epi8(32);
    for (int j = 0; j < 16; ++j) {  // sub-block j: groups 4j..4j+3, K step j / 4
      const __m128i s8 =
          _mm_loadu_si128(reinterpret_cast<const __m128i*>(pb + avx512::kQ6KScales + 16 * j));
      const __m512i s = _mm512_cvtepi8_epi32(s8);
      const __m512i d0 =
          _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(s, three), seven), three);
      const __m512i s1 = _mm512_srai_epi32(_mm512_sub_epi32(s, d0), 3);
      const __m512i d1 =
          _mm512_sub_epi32(_mm512_and_si512(_mm512_add_epi32(s1, three), seven), three);
      const __m512i d2 = _mm512_srai_epi32(_mm512_sub_epi32(s1, d1), 3);
      const DigitMasks masks[3] = {Masks(d0), Masks(d1), Masks(d2)};
      for (int g = 0; g < 4; ++g) {
        const int group = 4 * j + g;
        const __m512i q = _mm512_sub_epi8(avx512::Q6KGroup(pb, group), offset);
        const __m512i q2 = _mm512_add_epi8(q, q);
        const __m512i q4 = _mm512_add_epi8(q2, q2);
        for (int i = 0; i < 3; ++i) {
          _mm512_store_si512(w->b[i][group / 16][group % 16], Times(q, q2, q4, masks[i]));
        }
      }
    }
    b->dw = avx512::LoadHalves16(pb);
  }

  // acc += (dw * dx) * scaled, as the AVX-512 kernel.
  void Steps(const Block& b, const TokenRows& rows, int64_t t0, const Products& c,
             float (*acc)[16]) const {
    for (int t = 0; t < kTileTokens; ++t) {
      const __m512i scaled =
          _mm512_add_epi32(_mm512_add_epi32(_mm512_load_si512(c[0][t]),
                                            _mm512_slli_epi32(_mm512_load_si512(c[1][t]), 3)),
                           _mm512_slli_epi32(_mm512_load_si512(c[2][t]), 6));
      const __m512 d = _mm512_mul_ps(b.dw, _mm512_set1_ps(rows.D(t0 + t, rows.unit)));
      const __m512 term = _mm512_mul_ps(d, _mm512_cvtepi32_ps(scaled));
      float* sum = acc[t0 + t];
      _mm512_store_ps(sum, _mm512_add_ps(LoadSums(sum, rows.unit), term));
    }
  }
};

void GemmQ6_K(const PanelGemmArgs& a) { AmxGemm<Q6K>(a, kQ6_KAvx512.gemm); }

}  // namespace
}  // namespace kvmesh::kernels::amx

namespace kvmesh::kernels {

constinit const TierRecord<TensorType::kQ6_K, Tier::kAmx> kQ6_KAmx = {
    .gemm = amx::GemmQ6_K,
};

}  // namespace kvmesh::kernels
