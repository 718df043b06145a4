// Attention over f16 K and V rows, AVX2 + FMA + F16C, a block of 8 positions
// at a time: each score is the AVX2 DotF16's float, and each output
// AccumulateF16's, bit for bit (see KvBlockKernels in kv_row_kernels.h).
//
// Scores: a K row widens once for every query head of a group; a head's
// products are summed as DotFloatRow sums them (two accumulators over
// alternate 8-lane chunks, a lone last chunk into the first), and the lane
// sums of 8 rows are reduced together by SumLanes8, which forms HorizontalSum's
// additions for 8 vectors at once. Outputs: up to 8 accumulators per pass over
// the positions, each V chunk widening once for every head. Head sizes that
// are a multiple of 8 (8-64, 80, 96, 128, 256 among them; others have a scalar
// tail in the row kernel and walk with it).
#include <cmath>

#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/simd/kv_rows_float_avx2.h"

namespace kvmesh::kv_rows::avx2 {
namespace {

constexpr int kBlock = 8;

__m256 LoadF16(const uint8_t* row, int chunk) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row) + chunk));
}

// r[i] = HorizontalSum(v[i]) for i < 8 with the same additions: lanes i and
// i + 4, then the sums 0 + 2 and 1 + 3, then those two.
__m256 SumLanes8(const __m256 v[8]) {
  __m256 s4[4];  // rows 2m (low half) and 2m + 1: their four sums of i, i + 4
  for (int m = 0; m < 4; ++m) {
    s4[m] = _mm256_add_ps(_mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x20),
                          _mm256_permute2f128_ps(v[2 * m], v[2 * m + 1], 0x31));
  }
  // Half h of s2[m] holds rows 4m + h and 4m + h + 2: (p0 + p2, p1 + p3) each.
  __m256 s2[2];
  for (int m = 0; m < 2; ++m) {
    s2[m] = _mm256_add_ps(_mm256_shuffle_ps(s4[2 * m], s4[2 * m + 1], 0x44),
                          _mm256_shuffle_ps(s4[2 * m], s4[2 * m + 1], 0xEE));
  }
  // Element k of half h is row 2k + h.
  const __m256 s1 =
      _mm256_add_ps(_mm256_shuffle_ps(s2[0], s2[1], 0x88), _mm256_shuffle_ps(s2[0], s2[1], 0xDD));
  return _mm256_permutevar8x32_ps(s1, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

// Scores of kHeads query heads, widened to floats (kChunks 8-lane chunks
// each, q_stride floats apart), against every row.
template <int kChunks, int kHeads>
void ScoreHeads(const uint8_t* const* k_rows, int n_ctx, const float* query, int q_stride,
                float scale, float* scores, float* max_score) {
  __m256 max_lanes[kHeads];
  for (int g = 0; g < kHeads; ++g) max_lanes[g] = _mm256_set1_ps(-INFINITY);
  alignas(32) __m256 lanes[kHeads][kBlock];
  for (int j0 = 0; j0 < n_ctx; j0 += kBlock) {
    const int n = n_ctx - j0 < kBlock ? n_ctx - j0 : kBlock;
    const int ahead = n_ctx - j0 - kAhead;
    for (int i = 0; i < n; ++i) {
      if (i < ahead) Prefetch(k_rows[j0 + i + kAhead], 16 * kChunks);
      __m256 k[kChunks];
      for (int c = 0; c < kChunks; ++c) k[c] = LoadF16(k_rows[j0 + i], c);
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
    alignas(32) float s[kBlock];
    for (int g = 0; g < kHeads; ++g) {
      for (int i = n; i < kBlock; ++i) lanes[g][i] = _mm256_setzero_ps();
      const __m256 v = _mm256_mul_ps(SumLanes8(lanes[g]), _mm256_set1_ps(scale));
      _mm256_store_ps(s, v);
      float* out = scores + static_cast<size_t>(g) * n_ctx + j0;
      for (int i = 0; i < n; ++i) out[i] = s[i];
      if (n == kBlock) {
        max_lanes[g] = _mm256_max_ps(max_lanes[g], v);
      } else {
        for (int i = n; i < kBlock; ++i) s[i] = -INFINITY;
        max_lanes[g] = _mm256_max_ps(max_lanes[g], _mm256_load_ps(s));
      }
    }
  }
  for (int g = 0; g < kHeads; ++g) {
    alignas(32) float m[kBlock];
    _mm256_store_ps(m, max_lanes[g]);
    float best = m[0];
    for (int i = 1; i < kBlock; ++i) best = best < m[i] ? m[i] : best;
    max_score[g] = best;
  }
}

template <int kChunks>
void Scores(const uint8_t* const* k_rows, int n_ctx, const uint8_t* query, int n_q, float scale,
            float* scores, float* max_score) {
  constexpr int kStride = 8 * kChunks;
  ForEachHeadGroup(n_q, [&]<int kHeads>(int g0) {
    // The f16 queries widened once, exactly, as DotF16 widens them.
    alignas(32) float widened[kHeads * kStride];
    for (int g = 0; g < kHeads; ++g) {
      const uint8_t* q = query + static_cast<size_t>(g0 + g) * kStride * sizeof(uint16_t);
      for (int c = 0; c < kChunks; ++c)
        _mm256_store_ps(widened + g * kStride + 8 * c, LoadF16(q, c));
    }
    ScoreHeads<kChunks, kHeads>(k_rows, n_ctx, widened, kStride, scale,
                                scores + static_cast<size_t>(g0) * n_ctx, max_score + g0);
  });
}

bool ScoresF16(int head_dim, const uint8_t* const* k_rows, int n_ctx, const uint8_t* query, int n_q,
               float scale, float* scores, float* max_score) {
  if (head_dim % 8 != 0) return false;
  switch (head_dim / 8) {
    case 1:
      Scores<1>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 2:
      Scores<2>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 4:
      Scores<4>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 8:
      Scores<8>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 10:
      Scores<10>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 12:
      Scores<12>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 16:
      Scores<16>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    case 32:
      Scores<32>(k_rows, n_ctx, query, n_q, scale, scores, max_score);
      return true;
    default:
      return false;  // the row kernels handle other sizes
  }
}

// out[g] = sum over positions of weight · V row, for kChunks 8-lane chunks
// from `lane0`, kHeads heads: fma(v, w, out) position by position from zero,
// as AccumulateF16 into a zeroed output.
template <int kChunks, int kHeads>
void WeightedLanes(const uint8_t* const* v_rows, int n_ctx, const float* weights, int64_t w_stride,
                   int lane0, int head_dim, float* out) {
  __m256 acc[kHeads][kChunks];
  for (int g = 0; g < kHeads; ++g) {
    for (int c = 0; c < kChunks; ++c) acc[g][c] = _mm256_setzero_ps();
  }
  for (int j = 0; j < n_ctx; ++j) {
    const uint8_t* row = v_rows[j] + lane0 * sizeof(uint16_t);
    if (j + kAhead < n_ctx) Prefetch(v_rows[j + kAhead] + lane0 * sizeof(uint16_t), 16 * kChunks);
    __m256 v[kChunks];
    for (int c = 0; c < kChunks; ++c) v[c] = LoadF16(row, c);
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

bool WeightedSumF16(int head_dim, const uint8_t* const* v_rows, int n_ctx, const float* weights,
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
      WeightedLanes<kStep, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, head_dim, o);
    }
    for (; lane0 < head_dim; lane0 += 8) {
      WeightedLanes<1, kHeads>(v_rows, n_ctx, w, weights_stride, lane0, head_dim, o);
    }
  });
  return true;
}

}  // namespace
}  // namespace kvmesh::kv_rows::avx2

namespace kvmesh::kernels {

constinit const KvBlockRecord<TensorType::kF16, Isa::kAvx2> kF16KvBlocksAvx2 = {
    .scores = kv_rows::avx2::ScoresF16,
    .weighted_sum = kv_rows::avx2::WeightedSumF16,
};

}  // namespace kvmesh::kernels
