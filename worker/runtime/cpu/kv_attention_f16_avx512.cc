// Attention over f16 K and V rows, AVX-512, a block of positions at a time:
// each score is DotF16's float, and each output AccumulateF16's, bit for bit
// (see KvBlockKernels in kv_row_kernels.h).
//
// Scores: per block of 16 positions, the K rows widen once for every query
// head; a head's products with one row are summed as DotF16 sums them (two
// accumulators over alternate 16-lane chunks, then SumLanes), and the 16
// lane sums of a block are reduced together (SumLanes16). Outputs: per head,
// the accumulators of 64 output lanes stay in registers over all positions,
// and each V row widens once for up to four heads.
#include <cmath>

#include "worker/runtime/cpu/kv_rows_float_avx512.h"
#include "worker/runtime/cpu/kv_rows_x86.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

constexpr int kBlock = 16;

__m512 LoadF16(const uint8_t* row, int chunk) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row) + chunk));
}

// Scores of kHeads query heads (kChunks 16-lane chunks each) against the
// positions [j0, j0 + n) of one block, n <= 16.
template <int kChunks, int kHeads>
void ScoreBlock(const uint8_t* const* k_rows, int j0, int n, const float* query, float scale,
                int n_ctx, float* scores, __m512* max_score) {
  alignas(64) __m512 lanes[kHeads][kBlock];
  for (int i = 0; i < n; ++i) {
    __m512 k[kChunks];
    for (int c = 0; c < kChunks; ++c) k[c] = LoadF16(k_rows[j0 + i], c);
    for (int g = 0; g < kHeads; ++g) {
      const float* q = query + g * kChunks * 16;
      __m512 acc0 = _mm512_setzero_ps();
      __m512 acc1 = _mm512_setzero_ps();
      for (int c = 0; c + 1 < kChunks; c += 2) {
        acc0 = _mm512_fmadd_ps(k[c], _mm512_load_ps(q + 16 * c), acc0);
        acc1 = _mm512_fmadd_ps(k[c + 1], _mm512_load_ps(q + 16 * c + 16), acc1);
      }
      if (kChunks % 2 == 1) {
        acc0 = _mm512_fmadd_ps(k[kChunks - 1], _mm512_load_ps(q + 16 * (kChunks - 1)), acc0);
      }
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

template <int kChunks, int kHeads>
void ScoreHeads(const uint8_t* const* k_rows, int n_ctx, const float* query, float scale,
                float* scores, float* max_score) {
  __m512 max_lanes[kHeads];
  for (int g = 0; g < kHeads; ++g) max_lanes[g] = _mm512_set1_ps(-INFINITY);
  for (int j0 = 0; j0 < n_ctx; j0 += kBlock) {
    const int n = n_ctx - j0 < kBlock ? n_ctx - j0 : kBlock;
    ScoreBlock<kChunks, kHeads>(k_rows, j0, n, query, scale, n_ctx, scores, max_lanes);
  }
  for (int g = 0; g < kHeads; ++g) max_score[g] = _mm512_reduce_max_ps(max_lanes[g]);
}

template <int kChunks>
void Scores(const uint8_t* const* k_rows, int n_ctx, const uint8_t* query, int n_q, float scale,
            float* scores, float* max_score) {
  constexpr int kDim = 16 * kChunks;
  // The f16 queries widened once (exactly, as DotF16 widens them).
  alignas(64) float widened[4 * kDim];
  for (int g0 = 0; g0 < n_q; g0 += 4) {
    const int heads = n_q - g0 < 4 ? n_q - g0 : 4;
    for (int g = 0; g < heads; ++g) {
      const uint8_t* q = query + static_cast<size_t>(g0 + g) * kDim * sizeof(uint16_t);
      for (int c = 0; c < kChunks; ++c) _mm512_store_ps(widened + g * kDim + 16 * c, LoadF16(q, c));
    }
    float* s = scores + static_cast<size_t>(g0) * n_ctx;
    float* m = max_score + g0;
    switch (heads) {
      case 1:
        ScoreHeads<kChunks, 1>(k_rows, n_ctx, widened, scale, s, m);
        break;
      case 2:
        ScoreHeads<kChunks, 2>(k_rows, n_ctx, widened, scale, s, m);
        break;
      case 3:
        ScoreHeads<kChunks, 3>(k_rows, n_ctx, widened, scale, s, m);
        break;
      default:
        ScoreHeads<kChunks, 4>(k_rows, n_ctx, widened, scale, s, m);
        break;
    }
  }
}

// out[g] = sum over positions of weight * V row, 64 lanes (kChunks = 4) at
// `lane0`, for kHeads heads: out = fma(v, w, out) position by position from
// zero, as AccumulateF16 into a zeroed output.
template <int kHeads>
void WeightedLanes(const uint8_t* const* v_rows, int n_ctx, const float* weights, int lane0,
                   int head_dim, float* out) {
  constexpr int kChunks = 4;
  __m512 acc[kHeads][kChunks];
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm512_setzero_ps();
  }
  for (int j = 0; j < n_ctx; ++j) {
    __m512 v[kChunks];
    for (int c = 0; c < kChunks; ++c) v[c] = LoadF16(v_rows[j] + lane0 * sizeof(uint16_t), c);
    for (int g = 0; g < kHeads; ++g) {
      const __m512 w = _mm512_set1_ps(weights[static_cast<size_t>(g) * n_ctx + j]);
      for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm512_fmadd_ps(v[c], w, acc[g][c]);
    }
  }
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < kChunks; ++c) {
      _mm512_storeu_ps(out + g * head_dim + lane0 + 16 * c, acc[g][c]);
    }
  }
}

}  // namespace

bool ScoresF16(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query, int n_q,
               float scale, float* scores, float* max_score) {
  switch (head_dim) {
    case 64:
      Scores<4>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 128:
      Scores<8>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    default:
      return false;
  }
}

bool WeightedSumF16(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
                    int n_q, float* out) {
  if (head_dim % 64 != 0) return false;
  for (int g0 = 0; g0 < n_q; g0 += 4) {
    const int heads = n_q - g0 < 4 ? n_q - g0 : 4;
    const float* w = weights + static_cast<size_t>(g0) * n_ctx;
    float* o = out + static_cast<size_t>(g0) * head_dim;
    for (int lane0 = 0; lane0 < head_dim; lane0 += 64) {
      switch (heads) {
        case 1:
          WeightedLanes<1>(v_rows, n_ctx, w, lane0, head_dim, o);
          break;
        case 2:
          WeightedLanes<2>(v_rows, n_ctx, w, lane0, head_dim, o);
          break;
        case 3:
          WeightedLanes<3>(v_rows, n_ctx, w, lane0, head_dim, o);
          break;
        default:
          WeightedLanes<4>(v_rows, n_ctx, w, lane0, head_dim, o);
          break;
      }
    }
  }
  return true;
}

}  // namespace kvmesh::kv_rows::avx512
