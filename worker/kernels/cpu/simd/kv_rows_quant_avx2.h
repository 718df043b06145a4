// The KV row and block kernels of the quantized storage types (q8_0, q4_0,
// q3_nl) on AVX2 + FMA + F16C, written once over a policy P that turns one
// stored 32-value block into its 32 signed-byte levels:
//   Block                            the stored block (with an f16 scale d)
//   Unpack(const Block&) -> __m256i  its levels, in element order
// Each block's dot product with the q8_0 query is an exact integer sum,
// scaled by the two blocks' scales and accumulated in 8 float lanes, which
// HorizontalSum adds up; the block kernels reduce 8 rows' lanes at once with
// SumLanes8 (the same tree), so their scores are the row kernel's floats bit
// for bit. The weighted sums of V rows fma each level by weight · d into the
// output lanes from zero, as the row kernel's accumulate does into a zeroed
// output. Include only from files compiled for AVX2: everything here has
// internal linkage.
#pragma once

#include <cmath>

#include "worker/kernels/cpu/simd/kv_rows_simd.h"

namespace kvmesh::kv_rows::avx2 {
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

template <typename P>
float DotQuantRow(int64_t n, const void* k, const void* q) {
  const auto* kb = static_cast<const typename P::Block*>(k);
  const auto* qb = static_cast<const kernels::BlockQ8_0*>(q);
  const int64_t num_blocks = n / kLegacyBlockSize;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t b = 0; b < num_blocks; ++b) {
    const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb[b].qs));
    const __m256 scale = _mm256_set1_ps(HalfToFloatF16c(kb[b].d) * HalfToFloatF16c(qb[b].d));
    acc = _mm256_fmadd_ps(DotBytes(P::Unpack(kb[b]), qv), scale, acc);
  }
  return HorizontalSum(acc);
}

template <typename P>
void AccumulateQuantRow(int64_t n, const void* v, float weight, float* out) {
  const auto* vb = static_cast<const typename P::Block*>(v);
  const int64_t num_blocks = n / kLegacyBlockSize;
  alignas(32) int8_t levels[kLegacyBlockSize];
  for (int64_t b = 0; b < num_blocks; ++b) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(levels), P::Unpack(vb[b]));
    const __m256 scale = _mm256_set1_ps(weight * HalfToFloatF16c(vb[b].d));
    float* o = out + b * kLegacyBlockSize;
    for (int g = 0; g < kLegacyBlockSize; g += 8) AccumulateBytes8(levels + g, scale, o + g);
  }
}

// Scores of kHeads query heads (kBlocks q8_0 blocks each, one after another
// at `query`) against every row: a block of 8 rows at a time, each row's
// levels unpacked once for all heads.
template <typename P, int kBlocks, int kHeads>
void QuantScoreHeads(const uint8_t* const* k_rows, int n_ctx, const kernels::BlockQ8_0* query,
                     float scale, float* scores, float* max_score) {
  constexpr int kRowBytes = kBlocks * static_cast<int>(sizeof(typename P::Block));
  constexpr int kRows = 8;
  __m256 max_lanes[kHeads];
  for (int g = 0; g < kHeads; ++g) max_lanes[g] = _mm256_set1_ps(-INFINITY);
  alignas(32) __m256 lanes[kHeads][kRows];
  for (int j0 = 0; j0 < n_ctx; j0 += kRows) {
    const int n = n_ctx - j0 < kRows ? n_ctx - j0 : kRows;
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
        const kernels::BlockQ8_0* q = query + g * kBlocks;
        __m256 acc = _mm256_setzero_ps();
        for (int b = 0; b < kBlocks; ++b) {
          const __m256i qv = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[b].qs));
          acc = _mm256_fmadd_ps(DotBytes(levels[b], qv),
                                _mm256_set1_ps(scales[b] * HalfToFloatF16c(q[b].d)), acc);
        }
        lanes[g][i] = acc;
      }
    }
    for (int g = 0; g < kHeads; ++g) {
      StoreBlockScores8(lanes[g], n, scale, scores + static_cast<size_t>(g) * n_ctx + j0,
                        &max_lanes[g]);
    }
  }
  for (int g = 0; g < kHeads; ++g) max_score[g] = MaxLane8(max_lanes[g]);
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

// out[g] = sum over rows of weight · level · d for the kChunks 8-value
// chunks from `chunk0` of every row (all in one stored block), kHeads heads,
// accumulators in registers from zero.
template <typename P, int kChunks, int kHeads>
void QuantWeightedChunks(const uint8_t* const* v_rows, int n_ctx, const float* weights,
                         int64_t w_stride, int chunk0, int head_dim, float* out) {
  using Block = typename P::Block;
  const int block = chunk0 / 4;
  const int first = 8 * (chunk0 % 4);  // the chunks' first value in the block
  __m256 acc[kHeads][kChunks];
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm256_setzero_ps();
  }
  alignas(32) int8_t levels[kLegacyBlockSize];
  for (int j = 0; j < n_ctx; ++j) {
    if (j + kAhead < n_ctx) {
      Prefetch(v_rows[j + kAhead] + block * sizeof(Block), static_cast<int>(sizeof(Block)));
    }
    const Block& vb = reinterpret_cast<const Block*>(v_rows[j])[block];
    _mm256_store_si256(reinterpret_cast<__m256i*>(levels), P::Unpack(vb));
    __m256 x[kChunks];
    for (int c = 0; c < kChunks; ++c) {
      const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(levels + first + 8 * c));
      x[c] = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));
    }
    const float d = HalfToFloatF16c(vb.d);
    for (int g = 0; g < kHeads; ++g) {
      const __m256 scale = _mm256_set1_ps(weights[g * w_stride + j] * d);
      for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm256_fmadd_ps(x[c], scale, acc[g][c]);
    }
  }
  for (int g = 0; g < kHeads; ++g) {
    float* o = out + static_cast<size_t>(g) * head_dim + 8 * chunk0;
    for (int c = 0; c < kChunks; ++c) _mm256_storeu_ps(o + 8 * c, acc[g][c]);
  }
}

// KvBlockKernels::weighted_sum for any whole number of blocks: at most 8
// accumulators (of 16 registers), so a whole block per walk for up to 2
// heads, half a block for up to 4 and a quarter for more.
template <typename P>
bool QuantWeightedSum(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
                      int64_t weights_stride, int n_q, float* out) {
  if (head_dim <= 0 || head_dim % kLegacyBlockSize != 0) return false;
  const int n_chunks = head_dim / 8;
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    constexpr int kStep = kHeads <= 2 ? 4 : (kHeads <= 4 ? 2 : 1);
    const float* w = weights + g0 * weights_stride;
    float* o = out + static_cast<size_t>(g0) * head_dim;
    for (int c = 0; c < n_chunks; c += kStep) {
      QuantWeightedChunks<P, kStep, kHeads>(v_rows, n_ctx, w, weights_stride, c, head_dim, o);
    }
  });
  return true;
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2
