// The KV row and block kernels of the quantized storage types (q8_0, q4_0,
// q3_nl) on AVX-512, written once over a policy P that turns one stored
// 32-value block into its 32 signed-byte levels:
//   Block                            the stored block (with an f16 scale d)
//   Unpack(const Block&) -> __m256i  its levels, in element order
// Every dot product is exact per block (integer sums of level · query byte,
// the query being q8_0), scaled by the two blocks' scales, and accumulated in
// 16 float lanes: two blocks per fma, a last odd block in the low 8 lanes.
// The lanes are summed by SumLanes, whose tree SumLanes16 repeats for 16 rows
// at once, so the block kernels' scores are the row kernel's floats bit for
// bit. The weighted sums of V rows fma each level by weight · d into the
// output lanes from zero, as the row kernel's accumulate does into a zeroed
// output. Include only from files compiled for AVX-512.
#pragma once

#include <cmath>

#include "worker/kernels/cpu/simd/kv_rows_float_avx512.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

using kernels::kLegacyBlockSize;

struct Q8_0Rows {
  using Block = kernels::BlockQ8_0;
  static __m256i Unpack(const Block& b) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
  }
};

struct Q4_0Rows {
  using Block = kernels::BlockQ4_0;
  static __m256i Unpack(const Block& b) { return UnpackQ4_0(b); }
};

struct Q3_NLRows {
  using Block = kernels::BlockQ3_NL;
  static __m256i Unpack(const Block& b) { return UnpackQ3_NL(b); }
};

inline __m256i QueryLevels(const kernels::BlockQ8_0& b) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b.qs));
}

// The 16 lanes of one row's dot product with one query, given the row's
// levels and scales (as floats) block by block; `n_blocks` of them.
inline __m512 QuantDotLanes(const __m256i* levels, const float* scales, int n_blocks,
                            const kernels::BlockQ8_0* q) {
  __m512 acc = _mm512_setzero_ps();
  int b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    acc = _mm512_fmadd_ps(DotBytes512(Concat(levels[b], levels[b + 1]),
                                      Concat(QueryLevels(q[b]), QueryLevels(q[b + 1]))),
                          SplitScale(scales[b] * HalfToFloatF16c(q[b].d),
                                     scales[b + 1] * HalfToFloatF16c(q[b + 1].d)),
                          acc);
  }
  if (b < n_blocks) {
    acc = _mm512_fmadd_ps(_mm512_zextps256_ps512(DotBytes(levels[b], QueryLevels(q[b]))),
                          _mm512_set1_ps(scales[b] * HalfToFloatF16c(q[b].d)), acc);
  }
  return acc;
}

// QuantDotLanes's arithmetic, unpacking each block where it is used.
template <typename P>
float DotQuantRow(int64_t n, const void* k, const void* q) {
  const auto* kb = static_cast<const typename P::Block*>(k);
  const auto* qb = static_cast<const kernels::BlockQ8_0*>(q);
  const int64_t n_blocks = n / kLegacyBlockSize;
  __m512 acc = _mm512_setzero_ps();
  int64_t b = 0;
  for (; b + 2 <= n_blocks; b += 2) {
    acc = _mm512_fmadd_ps(DotBytes512(Concat(P::Unpack(kb[b]), P::Unpack(kb[b + 1])),
                                      Concat(QueryLevels(qb[b]), QueryLevels(qb[b + 1]))),
                          SplitScale(HalfToFloatF16c(kb[b].d) * HalfToFloatF16c(qb[b].d),
                                     HalfToFloatF16c(kb[b + 1].d) * HalfToFloatF16c(qb[b + 1].d)),
                          acc);
  }
  if (b < n_blocks) {
    acc = _mm512_fmadd_ps(_mm512_zextps256_ps512(DotBytes(P::Unpack(kb[b]), QueryLevels(qb[b]))),
                          _mm512_set1_ps(HalfToFloatF16c(kb[b].d) * HalfToFloatF16c(qb[b].d)), acc);
  }
  return SumLanes(acc);
}

template <typename P>
void AccumulateQuantRow(int64_t n, const void* v, float weight, float* out) {
  const auto* vb = static_cast<const typename P::Block*>(v);
  const int64_t n_blocks = n / kLegacyBlockSize;
  for (int64_t b = 0; b < n_blocks; ++b) {
    const __m256i levels = P::Unpack(vb[b]);
    const __m512 scale = _mm512_set1_ps(weight * HalfToFloatF16c(vb[b].d));
    float* o = out + b * kLegacyBlockSize;
    AccumulateBytes16(_mm256_castsi256_si128(levels), scale, o);
    AccumulateBytes16(_mm256_extracti128_si256(levels, 1), scale, o + 16);
  }
}

// Scores of kHeads query heads (kBlocks q8_0 blocks each, one after another
// at `query`) against every row: a block of 16 rows at a time, each row's
// levels unpacked once for all heads.
template <typename P, int kBlocks, int kHeads>
void QuantScoreHeads(const uint8_t* const* k_rows, int n_ctx, const kernels::BlockQ8_0* query,
                     float scale, float* scores, float* max_score) {
  constexpr int kRowBytes = kBlocks * static_cast<int>(sizeof(typename P::Block));
  __m512 max_lanes[kHeads];
  for (int g = 0; g < kHeads; ++g) max_lanes[g] = _mm512_set1_ps(-INFINITY);
  alignas(64) __m512 lanes[kHeads][16];
  for (int j0 = 0; j0 < n_ctx; j0 += 16) {
    const int n = n_ctx - j0 < 16 ? n_ctx - j0 : 16;
    const int ahead = n_ctx - j0 - kAhead;
    for (int i = 0; i < n; ++i) {
      if (i < ahead) Prefetch(k_rows[j0 + i + kAhead], kRowBytes);
      const auto* kb = reinterpret_cast<const typename P::Block*>(k_rows[j0 + i]);
      __m256i levels[kBlocks];
      float scales[kBlocks];
      for (int b = 0; b < kBlocks; ++b) {
        levels[b] = P::Unpack(kb[b]);
        scales[b] = HalfToFloatF16c(kb[b].d);
      }
      for (int g = 0; g < kHeads; ++g) {
        lanes[g][i] = QuantDotLanes(levels, scales, kBlocks, query + g * kBlocks);
      }
    }
    const __mmask16 valid = TailMask(n);
    for (int g = 0; g < kHeads; ++g) {
      for (int i = n; i < 16; ++i) lanes[g][i] = _mm512_setzero_ps();
      const __m512 s = _mm512_mul_ps(SumLanes16(lanes[g]), _mm512_set1_ps(scale));
      _mm512_mask_storeu_ps(scores + static_cast<size_t>(g) * n_ctx + j0, valid, s);
      max_lanes[g] = _mm512_mask_max_ps(max_lanes[g], valid, s, max_lanes[g]);
    }
  }
  for (int g = 0; g < kHeads; ++g) max_score[g] = _mm512_reduce_max_ps(max_lanes[g]);
}

template <typename P, int kBlocks>
void QuantScoresOf(const uint8_t* const* k_rows, int n_ctx, const uint8_t* query, int n_q,
                   float scale, float* scores, float* max_score) {
  const auto* q = reinterpret_cast<const kernels::BlockQ8_0*>(query);
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    QuantScoreHeads<P, kBlocks, kHeads>(k_rows, n_ctx, q + g0 * kBlocks, scale,
                                        scores + static_cast<size_t>(g0) * n_ctx, max_score + g0);
  });
}

// KvBlockKernels::scores for head sizes of 1-6 or 8 blocks (32-192, 256).
template <typename P>
bool QuantScores(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query,
                 int n_q, float scale, float* scores, float* max_score) {
  if (head_dim % kLegacyBlockSize != 0) return false;
  switch (head_dim / kLegacyBlockSize) {
    case 1:
      QuantScoresOf<P, 1>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 2:
      QuantScoresOf<P, 2>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 3:
      QuantScoresOf<P, 3>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 4:
      QuantScoresOf<P, 4>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 5:
      QuantScoresOf<P, 5>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 6:
      QuantScoresOf<P, 6>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 8:
      QuantScoresOf<P, 8>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    default:
      return false;  // the row kernels handle other sizes
  }
}

// out[g] += sum over rows of weight · level · d for the kPass blocks from
// `block0` of every row, kHeads heads, accumulators in registers from zero.
template <typename P, int kPass, int kHeads>
void QuantWeightedBlocks(const uint8_t* const* v_rows, int n_ctx, const float* weights,
                         int64_t w_stride, int block0, int head_dim, float* out) {
  using Block = typename P::Block;
  __m512 acc[kHeads][2 * kPass];
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < 2 * kPass; ++c) acc[g][c] = _mm512_setzero_ps();
  }
  for (int j = 0; j < n_ctx; ++j) {
    if (j + kAhead < n_ctx) {
      Prefetch(v_rows[j + kAhead] + block0 * sizeof(Block),
               kPass * static_cast<int>(sizeof(Block)));
    }
    const Block* vb = reinterpret_cast<const Block*>(v_rows[j]) + block0;
    for (int b = 0; b < kPass; ++b) {
      const __m256i levels = P::Unpack(vb[b]);
      const __m512 lo = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_castsi256_si128(levels)));
      const __m512 hi =
          _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm256_extracti128_si256(levels, 1)));
      const float d = HalfToFloatF16c(vb[b].d);
      for (int g = 0; g < kHeads; ++g) {
        const __m512 scale = _mm512_set1_ps(weights[g * w_stride + j] * d);
        acc[g][2 * b] = _mm512_fmadd_ps(lo, scale, acc[g][2 * b]);
        acc[g][2 * b + 1] = _mm512_fmadd_ps(hi, scale, acc[g][2 * b + 1]);
      }
    }
  }
  for (int g = 0; g < kHeads; ++g) {
    float* o = out + static_cast<size_t>(g) * head_dim + block0 * kLegacyBlockSize;
    for (int c = 0; c < 2 * kPass; ++c) _mm512_storeu_ps(o + 16 * c, acc[g][c]);
  }
}

// KvBlockKernels::weighted_sum for any whole number of blocks: up to 16
// accumulators, so two blocks per walk for up to 4 heads and one for more.
template <typename P>
bool QuantWeightedSum(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
                      int64_t weights_stride, int n_q, float* out) {
  if (head_dim <= 0 || head_dim % kLegacyBlockSize != 0) return false;
  const int n_blocks = head_dim / kLegacyBlockSize;
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    constexpr int kPass = kHeads <= 4 ? 2 : 1;
    const float* w = weights + g0 * weights_stride;
    float* o = out + static_cast<size_t>(g0) * head_dim;
    int b = 0;
    for (; b + kPass <= n_blocks; b += kPass) {
      QuantWeightedBlocks<P, kPass, kHeads>(v_rows, n_ctx, w, weights_stride, b, head_dim, o);
    }
    if (b < n_blocks) {
      QuantWeightedBlocks<P, 1, kHeads>(v_rows, n_ctx, w, weights_stride, b, head_dim, o);
    }
  });
  return true;
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512
