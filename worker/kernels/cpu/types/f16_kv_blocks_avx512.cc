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

#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx512.h"

namespace kvmesh::kv_rows::avx512 {
namespace {

constexpr int kBlock = 16;

__m512 LoadF16(const uint8_t* row, int chunk) {
  return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(row) + chunk));
}

// Scores of kHeads query heads (kChunks 16-lane chunks each) against the
// positions [j0, j0 + n) of one block, n <= 16.
// Calls body.template operator()<kHeads>(g0) for the query heads
// [g0, g0 + kHeads) of n_q, in groups of up to four.
template <typename Body>
void ForEachHeadGroup(int n_q, Body body) {
  for (int g0 = 0; g0 < n_q; g0 += 4) {
    switch (n_q - g0) {
      case 1:
        body.template operator()<1>(g0);
        break;
      case 2:
        body.template operator()<2>(g0);
        break;
      case 3:
        body.template operator()<3>(g0);
        break;
      default:
        body.template operator()<4>(g0);
        break;
    }
  }
}

template <int kChunks, int kHeads>
void ScoreBlock(const uint8_t* const* k_rows, int j0, int n, const float* query, float scale,
                int n_ctx, float* scores, __m512* max_score) {
  static_assert(kChunks % 2 == 0, "DotF16's two accumulators take alternate chunks");
  alignas(64) __m512 lanes[kHeads][kBlock];
  for (int i = 0; i < n; ++i) {
    __m512 k[kChunks];
    for (int c = 0; c < kChunks; ++c) k[c] = LoadF16(k_rows[j0 + i], c);
    for (int g = 0; g < kHeads; ++g) {
      const float* q = query + g * kChunks * 16;
      __m512 acc0 = _mm512_setzero_ps();
      __m512 acc1 = _mm512_setzero_ps();
      for (int c = 0; c < kChunks; c += 2) {
        acc0 = _mm512_fmadd_ps(k[c], _mm512_load_ps(q + 16 * c), acc0);
        acc1 = _mm512_fmadd_ps(k[c + 1], _mm512_load_ps(q + 16 * c + 16), acc1);
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
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    // The f16 queries widened once (exactly, as DotF16 widens them).
    alignas(64) float widened[kHeads * kDim];
    for (int g = 0; g < kHeads; ++g) {
      const uint8_t* q = query + static_cast<size_t>(g0 + g) * kDim * sizeof(uint16_t);
      for (int c = 0; c < kChunks; ++c) _mm512_store_ps(widened + g * kDim + 16 * c, LoadF16(q, c));
    }
    ScoreHeads<kChunks, kHeads>(k_rows, n_ctx, widened, scale,
                                scores + static_cast<size_t>(g0) * n_ctx, max_score + g0);
  });
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
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    for (int lane0 = 0; lane0 < head_dim; lane0 += 64) {
      WeightedLanes<kHeads>(v_rows, n_ctx, weights + static_cast<size_t>(g0) * n_ctx, lane0,
                            head_dim, out + static_cast<size_t>(g0) * head_dim);
    }
  });
  return true;
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx512

namespace kvmesh::kernels {

constinit const KvBlockRecord<TensorType::kF16, Isa::kAvx512> kF16KvBlocksAvx512 = {
    .scores = kv_rows::avx512::ScoresF16,
    .weighted_sum = kv_rows::avx512::WeightedSumF16,
};

}  // namespace kvmesh::kernels
