// Attention over K and V rows stored as floats of any width (f32, f16, bf16)
// on AVX-512, a block of positions at a time, over the policies of
// kv_rows_float_avx512.h: each score is DotFloatRow's float, and each output
// AccumulateFloatRow's, bit for bit (see KvBlockKernels in kv_row_kernels.h).
//
// Scores: per block of 16 positions, the K rows widen once for every query
// head; a head's products with one row are summed as DotFloatRow sums them
// (two accumulators over alternate 16-lane chunks, a partial last chunk by
// masked loads into the second, then SumLanes), and the 16 lane sums of a
// block are reduced together (SumLanes16). Outputs: per head, the
// accumulators of up to 64 output lanes stay in registers over all positions
// (32 for five to eight heads), and each V row widens once for up to eight
// heads. Scores take head sizes of 0, 1, 2, 4, 5, 6, 8 or 16 whole 16-lane
// chunks plus any partial one (1-47, 64-111, 128-143, 256-271: 8, 64, 80, 96,
// 128, 256 among them), the weighted sum any size. Include only from
// files compiled for AVX-512: everything here has internal linkage.
#pragma once

#include <cmath>

#include "worker/kernels/cpu/simd/kv_rows_float_avx512.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

constexpr int kBlock = 16;

// Chunk `chunk` (16 values) of a stored row, as floats.
template <typename P>
__m512 LoadChunk(const uint8_t* row, int chunk) {
  return P::Load(reinterpret_cast<const typename P::Element*>(row) + 16 * chunk);
}

// The lanes of `mask` of chunk `chunk`, the others 0 (DotFloatRow's tail
// load).
template <typename P>
__m512 LoadChunkTail(const uint8_t* row, int chunk, __mmask16 mask) {
  return P::LoadTail(mask, reinterpret_cast<const typename P::Element*>(row) + 16 * chunk);
}

// Bytes of one stored value.
template <typename P>
constexpr int kSize = static_cast<int>(sizeof(typename P::Element));

// Scores of kHeads query heads (kChunks 16-lane chunks each) against the
// positions [j0, j0 + n) of one block, n <= 16: kChunks full 16-lane chunks, then a partial one of
// the lanes in `tail` (none when 0), as DotFloatRow walks a row: full chunks alternate between two
// accumulators (even chunks to the first, so a lone last one too), the
// partial one goes to the second.
template <typename P, int kChunks, int kHeads>
void FloatScoreBlock(const uint8_t* const* k_rows, int j0, int n, const float* query, int q_stride,
                     __mmask16 tail, float scale, int n_ctx, float* scores, __m512* max_score) {
  alignas(64) __m512 lanes[kHeads][kBlock];
  const int ahead = n_ctx - j0 - kAhead;  // rows left to prefetch
  for (int i = 0; i < n; ++i) {
    if (i < ahead)
      Prefetch(k_rows[j0 + i + kAhead], 16 * kSize<P> * (kChunks + (tail != 0 ? 1 : 0)));
    __m512 k[kChunks + 1];
    for (int c = 0; c < kChunks; ++c) k[c] = LoadChunk<P>(k_rows[j0 + i], c);
    if (tail != 0) k[kChunks] = LoadChunkTail<P>(k_rows[j0 + i], kChunks, tail);
    for (int g = 0; g < kHeads; ++g) {
      const float* q = query + g * q_stride;
      __m512 acc0 = _mm512_setzero_ps();
      __m512 acc1 = _mm512_setzero_ps();
      for (int c = 0; c < kChunks; ++c) {
        if (c % 2 == 0) {
          acc0 = _mm512_fmadd_ps(k[c], _mm512_load_ps(q + 16 * c), acc0);
        } else {
          acc1 = _mm512_fmadd_ps(k[c], _mm512_load_ps(q + 16 * c), acc1);
        }
      }
      if (tail != 0) acc1 = _mm512_fmadd_ps(k[kChunks], _mm512_load_ps(q + 16 * kChunks), acc1);
      lanes[g][i] = _mm512_add_ps(acc0, acc1);
    }
  }
  const __mmask16 valid = TailMask(n);
  for (int g = 0; g < kHeads; ++g) {
    for (int i = n; i < kBlock; ++i) lanes[g][i] = _mm512_setzero_ps();
    const __m512 s = _mm512_mul_ps(SumLanes16(lanes[g]), _mm512_set1_ps(scale));
    _mm512_mask_storeu_ps(scores + g * n_ctx + j0, valid, s);
    max_score[g] = _mm512_mask_max_ps(max_score[g], valid, s, max_score[g]);
  }
}

template <typename P, int kChunks, int kHeads>
void FloatScoreHeads(const uint8_t* const* k_rows, int n_ctx, const float* query, int q_stride,
                     __mmask16 tail, float scale, float* scores, float* max_score) {
  __m512 max_lanes[kHeads];
  for (int g = 0; g < kHeads; ++g) max_lanes[g] = _mm512_set1_ps(-INFINITY);
  for (int j0 = 0; j0 < n_ctx; j0 += kBlock) {
    const int n = n_ctx - j0 < kBlock ? n_ctx - j0 : kBlock;
    FloatScoreBlock<P, kChunks, kHeads>(k_rows, j0, n, query, q_stride, tail, scale, n_ctx, scores,
                                        max_lanes);
  }
  for (int g = 0; g < kHeads; ++g) max_score[g] = _mm512_reduce_max_ps(max_lanes[g]);
}

// kChunks = head_dim / 16 full chunks and head_dim % 16 tail lanes.
template <typename P, int kChunks>
void FloatScoresOf(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query,
                   int n_q, float scale, float* scores, float* max_score) {
  const int rest = head_dim - 16 * kChunks;
  const __mmask16 tail = rest > 0 ? TailMask(rest) : 0;
  constexpr int kStride = 16 * (kChunks + 1);  // floats per widened query, padded
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    // The queries widened once (exactly, as DotFloatRow widens them), the
    // lanes past head_dim zero (as its masked tail load leaves them).
    alignas(64) float widened[kHeads * kStride];
    for (int g = 0; g < kHeads; ++g) {
      const uint8_t* q = query + static_cast<size_t>(g0 + g) * head_dim * kSize<P>;
      for (int c = 0; c < kChunks; ++c)
        _mm512_store_ps(widened + g * kStride + 16 * c, LoadChunk<P>(q, c));
      _mm512_store_ps(widened + g * kStride + 16 * kChunks,
                      tail != 0 ? LoadChunkTail<P>(q, kChunks, tail) : _mm512_setzero_ps());
    }
    FloatScoreHeads<P, kChunks, kHeads>(k_rows, n_ctx, widened, kStride, tail, scale,
                                        scores + static_cast<size_t>(g0) * n_ctx, max_score + g0);
  });
}

// out[g] = sum over positions of weight * V row, for the kChunks 16-lane
// chunks at `lane0` (the last one only the lanes of `last`), for kHeads heads:
// out = fma(v, w, out) position by position from zero, as AccumulateFloatRow into
// a zeroed output.
template <typename P, int kChunks, int kHeads>
void FloatWeightedLanes(const uint8_t* const* v_rows, int n_ctx, const float* weights,
                        int64_t w_stride, int lane0, __mmask16 last, int head_dim, float* out) {
  __m512 acc[kHeads][kChunks];
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm512_setzero_ps();
  }
  for (int j = 0; j < n_ctx; ++j) {
    if (j + kAhead < n_ctx)
      Prefetch(v_rows[j + kAhead] + lane0 * kSize<P>, 16 * kSize<P> * kChunks);
    __m512 v[kChunks];
    const uint8_t* row = v_rows[j] + lane0 * kSize<P>;
    for (int c = 0; c + 1 < kChunks; ++c) v[c] = LoadChunk<P>(row, c);
    v[kChunks - 1] =
        last == 0xFFFF ? LoadChunk<P>(row, kChunks - 1) : LoadChunkTail<P>(row, kChunks - 1, last);
    for (int g = 0; g < kHeads; ++g) {
      const __m512 w = _mm512_set1_ps(weights[g * w_stride + j]);
      for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm512_fmadd_ps(v[c], w, acc[g][c]);
    }
  }
  for (int g = 0; g < kHeads; ++g) {
    float* o = out + g * head_dim + lane0;
    for (int c = 0; c + 1 < kChunks; ++c) _mm512_storeu_ps(o + 16 * c, acc[g][c]);
    _mm512_mask_storeu_ps(o + 16 * (kChunks - 1), last, acc[g][kChunks - 1]);
  }
}

template <typename P>
bool FloatScores(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query,
                 int n_q, float scale, float* scores, float* max_score) {
  switch (head_dim / 16) {
    case 0:
      FloatScoresOf<P, 0>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 1:
      FloatScoresOf<P, 1>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 2:
      FloatScoresOf<P, 2>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 4:
      FloatScoresOf<P, 4>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 5:
      FloatScoresOf<P, 5>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 6:
      FloatScoresOf<P, 6>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 8:
      FloatScoresOf<P, 8>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 16:
      FloatScoresOf<P, 16>(head_dim, k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    default:
      return false;  // the row kernels handle other sizes
  }
}

template <typename P>
bool FloatWeightedSum(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
                      int64_t weights_stride, int n_q, float* out) {
  if (head_dim <= 0) return false;
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    const float* w = weights + g0 * weights_stride;
    float* o = out + static_cast<size_t>(g0) * head_dim;
    // Up to 16 accumulators: 64 lanes (4 chunks) at a time for up to 4 heads,
    // 32 lanes for up to 8, 16 lanes for more; then what is left in fewer
    // chunks.
    constexpr int kStep = kHeads <= 4 ? 4 : (kHeads <= 8 ? 2 : 1);
    int lane0 = 0;
    for (; lane0 + 16 * kStep <= head_dim; lane0 += 16 * kStep) {
      FloatWeightedLanes<P, kStep, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, 0xFFFF,
                                           head_dim, o);
    }
    const int rest = head_dim - lane0;
    if (rest == 0) return;
    const __mmask16 last = rest % 16 == 0 ? 0xFFFF : TailMask(rest % 16);
    switch ((rest + 15) / 16) {
      case 1:
        FloatWeightedLanes<P, 1, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, last, head_dim,
                                         o);
        break;
      case 2:
        FloatWeightedLanes<P, 2, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, last, head_dim,
                                         o);
        break;
      case 3:
        FloatWeightedLanes<P, 3, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, last, head_dim,
                                         o);
        break;
      default:
        FloatWeightedLanes<P, 4, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, last, head_dim,
                                         o);
        break;
    }
  });
  return true;
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512
