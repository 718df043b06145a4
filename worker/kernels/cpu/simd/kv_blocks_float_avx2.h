// Attention over K and V rows stored as floats of any width (f32, f16, bf16)
// on AVX2 + FMA, a block of 8 positions at a time, over the policies of
// kv_rows_float_avx2.h: each score is DotFloatRow's float, and each output
// AccumulateFloatRow's, bit for bit (see KvBlockKernels in kv_row_kernels.h).
//
// Scores: a K row widens once for every query head of a group; a head's
// products are summed as DotFloatRow sums them (two accumulators over
// alternate 8-lane chunks, a lone last chunk into the first), and the lane
// sums of 8 rows are reduced together by SumLanes8, which forms HorizontalSum's
// additions for 8 vectors at once. Outputs: up to 8 accumulators per pass over
// the positions, each V chunk widening once for every head. Scores take head
// sizes of 1, 2, 4, 8, 10, 12, 16 or 32 chunks of 8 (8, 16, 32, 64, 80, 96,
// 128, 256), the weighted sum any multiple of 8; other sizes walk with the
// row kernels. Include only from files compiled
// for AVX2: everything here has internal linkage.
#pragma once

#include <cmath>

#include "worker/kernels/cpu/simd/kv_rows_float_avx2.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

constexpr int kFloatBlock = 8;

// Chunk `chunk` (8 values) of a stored row, as floats.
template <typename P>
__m256 LoadChunk(const uint8_t* row, int chunk) {
  return P::Load(reinterpret_cast<const typename P::Element*>(row) + 8 * chunk);
}

// Scores of kHeads query heads, widened to floats (kChunks 8-lane chunks
// each, q_stride floats apart), against every row.
template <typename P, int kChunks, int kHeads>
void FloatScoreHeads(const uint8_t* const* k_rows, int n_ctx, const float* query, int q_stride,
                     float scale, float* scores, float* max_score) {
  constexpr int kBlock = kFloatBlock;
  constexpr int kRowBytes = 8 * kChunks * static_cast<int>(sizeof(typename P::Element));
  __m256 max_lanes[kHeads];
  for (int g = 0; g < kHeads; ++g) max_lanes[g] = _mm256_set1_ps(-INFINITY);
  alignas(32) __m256 lanes[kHeads][kBlock];
  for (int j0 = 0; j0 < n_ctx; j0 += kBlock) {
    const int n = n_ctx - j0 < kBlock ? n_ctx - j0 : kBlock;
    const int ahead = n_ctx - j0 - kAhead;
    for (int i = 0; i < n; ++i) {
      if (i < ahead) Prefetch(k_rows[j0 + i + kAhead], kRowBytes);
      __m256 k[kChunks];
      for (int c = 0; c < kChunks; ++c) k[c] = LoadChunk<P>(k_rows[j0 + i], c);
      for (int g = 0; g < kHeads; ++g) {
        const float* q = query + g * q_stride;
        __m256 acc0 = _mm256_setzero_ps();
        __m256 acc1 = _mm256_setzero_ps();
        for (int c = 0; c < kChunks; ++c) {
          if (c % 2 == 0) {
            acc0 = _mm256_fmadd_ps(k[c], _mm256_load_ps(q + 8 * c), acc0);
          } else {
            acc1 = _mm256_fmadd_ps(k[c], _mm256_load_ps(q + 8 * c), acc1);
          }
        }
        lanes[g][i] = _mm256_add_ps(acc0, acc1);
      }
    }
    for (int g = 0; g < kHeads; ++g) {
      StoreBlockScores8(lanes[g], n, scale, scores + static_cast<size_t>(g) * n_ctx + j0,
                        &max_lanes[g]);
    }
  }
  for (int g = 0; g < kHeads; ++g) max_score[g] = MaxLane8(max_lanes[g]);
}

template <typename P, int kChunks>
void FloatScoresOf(const uint8_t* const* k_rows, int n_ctx, const uint8_t* query, int n_q,
                   float scale, float* scores, float* max_score) {
  constexpr int kStride = 8 * kChunks;
  constexpr size_t kRowBytes = kStride * sizeof(typename P::Element);
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    // The queries widened once, exactly, as DotFloatRow widens them.
    alignas(32) float widened[kHeads * kStride];
    for (int g = 0; g < kHeads; ++g) {
      const uint8_t* q = query + static_cast<size_t>(g0 + g) * kRowBytes;
      for (int c = 0; c < kChunks; ++c)
        _mm256_store_ps(widened + g * kStride + 8 * c, LoadChunk<P>(q, c));
    }
    FloatScoreHeads<P, kChunks, kHeads>(k_rows, n_ctx, widened, kStride, scale,
                                        scores + static_cast<size_t>(g0) * n_ctx, max_score + g0);
  });
}

// KvBlockKernels::scores for head sizes of 1, 2, 4, 8, 10, 12, 16 or 32
// chunks of 8.
template <typename P>
bool FloatScores(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query,
                 int n_q, float scale, float* scores, float* max_score) {
  if (head_dim % 8 != 0) return false;
  switch (head_dim / 8) {
    case 1:
      FloatScoresOf<P, 1>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 2:
      FloatScoresOf<P, 2>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 4:
      FloatScoresOf<P, 4>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 8:
      FloatScoresOf<P, 8>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 10:
      FloatScoresOf<P, 10>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 12:
      FloatScoresOf<P, 12>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 16:
      FloatScoresOf<P, 16>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 32:
      FloatScoresOf<P, 32>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    default:
      return false;  // the row kernels handle other sizes
  }
}

// out[g] = sum over positions of weight · V row, for kChunks 8-lane chunks
// from `lane0`, kHeads heads: fma(v, w, out) position by position from zero,
// as AccumulateFloatRow into a zeroed output.
template <typename P, int kChunks, int kHeads>
void FloatWeightedLanes(const uint8_t* const* v_rows, int n_ctx, const float* weights,
                        int64_t w_stride, int lane0, int head_dim, float* out) {
  constexpr int kSize = static_cast<int>(sizeof(typename P::Element));
  __m256 acc[kHeads][kChunks];
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm256_setzero_ps();
  }
  for (int j = 0; j < n_ctx; ++j) {
    const uint8_t* row = v_rows[j] + lane0 * kSize;
    if (j + kAhead < n_ctx) Prefetch(v_rows[j + kAhead] + lane0 * kSize, 8 * kSize * kChunks);
    __m256 v[kChunks];
    for (int c = 0; c < kChunks; ++c) v[c] = LoadChunk<P>(row, c);
    for (int g = 0; g < kHeads; ++g) {
      const __m256 w = _mm256_set1_ps(weights[g * w_stride + j]);
      for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm256_fmadd_ps(v[c], w, acc[g][c]);
    }
  }
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < kChunks; ++c) {
      _mm256_storeu_ps(out + g * head_dim + lane0 + 8 * c, acc[g][c]);
    }
  }
}

// KvBlockKernels::weighted_sum for any multiple of 8.
template <typename P>
bool FloatWeightedSum(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
                      int64_t weights_stride, int n_q, float* out) {
  if (head_dim <= 0 || head_dim % 8 != 0) return false;
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    const float* w = weights + g0 * weights_stride;
    float* o = out + static_cast<size_t>(g0) * head_dim;
    // At most 8 accumulators (of 16 registers): 4 chunks for up to 2 heads,
    // 2 for up to 4, 1 for more.
    constexpr int kStep = kHeads <= 2 ? 4 : (kHeads <= 4 ? 2 : 1);
    int lane0 = 0;
    for (; lane0 + 8 * kStep <= head_dim; lane0 += 8 * kStep) {
      FloatWeightedLanes<P, kStep, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, head_dim, o);
    }
    for (; lane0 < head_dim; lane0 += 8) {
      FloatWeightedLanes<P, 1, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, head_dim, o);
    }
  });
  return true;
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2
