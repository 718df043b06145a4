// KV page writes and paged attention on the device. Compiled without FMA
// contraction (CMakeLists.txt) so that WriteKv's transforms and encoders give
// the bytes the CPU writes (block_math_test checks the arithmetic itself).
#include <cuda_runtime.h>

#include <algorithm>

#include "worker/kernels/cuda/ops.h"

namespace kvmesh::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kMaxHeadDim = 256;
constexpr int kMaxGroup = 8;  // query heads per KV head in the split-K kernel
constexpr int kChunk = 256;   // positions per split-K block
constexpr int kWarps = kThreads / 32;

cudaStream_t S(Stream s) { return static_cast<cudaStream_t>(s); }

__device__ __forceinline__ size_t PageRow(const PagedKv& kv, const StepTokens& t, int64_t token,
                                          int32_t pos, int head) {
  const int32_t block = t.tables[t.table_offset[token] + pos / kv.block_size];
  return (static_cast<size_t>(block) * kv.block_size + pos % kv.block_size) * kv.n_head_kv + head;
}

// A warp's share of EncodeKvRow: lane l encodes elements l, l + 32, ... of
// an element type, or 32-value blocks l, l + 32, ... of a block type, with
// the same code, so the bytes are EncodeKvRow's.
__device__ void EncodeKvRowWarp(TensorType type, bool min_error, const float* x, uint8_t* dst,
                                int n, int lane) {
  size_t element = 0, block = 0;
  switch (type) {
    case TensorType::kF32:
      element = 4;
      break;
    case TensorType::kF16:
    case TensorType::kBF16:
      element = 2;
      break;
    case TensorType::kQ8_0:
      block = sizeof(BlockQ8_0);
      break;
    case TensorType::kQ4_0:
      block = sizeof(BlockQ4_0);
      break;
    case TensorType::kQ3_NL:
      block = sizeof(BlockQ3_NL);
      break;
    default:
      return;
  }
  if (element != 0) {
    for (int i = lane; i < n; i += 32) EncodeKvRow(type, min_error, x + i, dst + i * element, 1);
  } else {
    for (int b = lane; b < n / 32; b += 32) {
      EncodeKvRow(type, min_error, x + 32 * b, dst + b * block, 32);
    }
  }
}

// One warp per (token, head) row: the lanes load the row into shared memory
// together, lane 0 rotates it where the layout says (the CPU's serial
// Hadamard, block_math.h), and the lanes encode it (EncodeKvRowWarp). Rows j < n_head are query
// heads, rotated in place where K is stored rotated; the others are KV heads, whose K and V rows it
// stores.
__global__ void __launch_bounds__(kThreads) WriteKvKernel(KvWrite w, PagedKv kv, StepTokens t) {
  __shared__ float rows[kWarps][kMaxHeadDim];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int per_token = w.n_head + kv.n_head_kv;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (i >= t.n_tokens * per_token) return;  // whole warps leave together
  const int64_t token = i / per_token;
  const int j = static_cast<int>(i % per_token);
  const int hd = w.head_dim;
  float* buf = rows[warp];
  if (j < w.n_head) {
    if (!w.k_rotated) return;
    float* q = w.q + (token * w.n_head + j) * hd;
    for (int d = lane; d < hd; d += 32) buf[d] = q[d];
    __syncwarp();
    if (lane == 0) Hadamard(buf, hd);
    __syncwarp();
    for (int d = lane; d < hd; d += 32) q[d] = buf[d];
    return;
  }
  const int h = j - w.n_head;
  const size_t row = PageRow(kv, t, token, t.positions[token], h);
  const float* k = w.k + (token * kv.n_head_kv + h) * hd;
  for (int d = lane; d < hd; d += 32) {
    float x = k[d];
    if (w.k_mean != nullptr) x -= w.k_mean[h * hd + d];
    buf[d] = x;
  }
  __syncwarp();
  if (w.k_rotated && lane == 0) Hadamard(buf, hd);
  __syncwarp();
  EncodeKvRowWarp(kv.k_type, w.min_error, buf, kv.k + row * kv.k_row_bytes, hd, lane);
  __syncwarp();
  const float* v = w.v + (token * kv.n_head_kv + h) * hd;
  for (int d = lane; d < hd; d += 32) buf[d] = v[d];
  __syncwarp();
  if (w.v_rotated && lane == 0) Hadamard(buf, hd);
  __syncwarp();
  EncodeKvRowWarp(kv.v_type, w.min_error, buf, kv.v + row * kv.v_row_bytes, hd, lane);
}

// The reference: one thread per (token, query head), an online softmax over
// every position, rows decoded element by element.
__global__ void AttentionPlainKernel(AttentionArgs a, PagedKv kv, StepTokens t) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= t.n_tokens * a.n_head) return;
  const int64_t token = i / a.n_head;
  const int h = static_cast<int>(i % a.n_head);
  const int kv_head = h / (a.n_head / kv.n_head_kv);
  const int hd = a.head_dim;
  const float* q = a.q + (token * a.n_head + h) * hd;
  float acc[kMaxHeadDim];
  for (int d = 0; d < hd; ++d) acc[d] = 0.0f;
  float m = -INFINITY, l = 0.0f;
  const int32_t n = t.positions[token] + 1;
  for (int32_t p = 0; p < n; ++p) {
    const size_t row = PageRow(kv, t, token, p, kv_head);
    const uint8_t* k = kv.k + row * kv.k_row_bytes;
    const uint8_t* v = kv.v + row * kv.v_row_bytes;
    float s = 0.0f;
    for (int d = 0; d < hd; ++d) s += q[d] * KvElement(kv.k_type, k, d);
    s *= a.scale;
    const float m_new = fmaxf(m, s);
    const float c = expf(m - m_new);
    const float e = expf(s - m_new);
    l = l * c + e;
    for (int d = 0; d < hd; ++d) acc[d] = acc[d] * c + e * KvElement(kv.v_type, v, d);
    m = m_new;
  }
  for (int d = 0; d < hd; ++d) acc[d] /= l;
  if (a.v_rotated) Hadamard(acc, hd);
  float* out = a.out + (token * a.n_head + h) * hd;
  for (int d = 0; d < hd; ++d) out[d] = acc[d];
}

// Split-K: block (split, kv head, token) covers positions [split·kChunk,
// +kChunk) of the token's context for the `group` query heads of one KV head.
// Each warp takes every kWarps-th position; a lane holds head dimensions
// lane, lane+32, ...; the group's scores come from one read of each K row and
// the outputs from one read of each V row. The warps' softmax states merge in
// shared memory, and each block writes (max, sum, unnormalised output) for
// its chunk; CombineKernel merges the chunks.
__global__ void __launch_bounds__(kThreads)
    AttentionSplitKKernel(AttentionArgs a, PagedKv kv, StepTokens t, float* partial, int n_splits) {
  const int split = blockIdx.x;
  const int kv_head = blockIdx.y;
  const int64_t token = blockIdx.z;
  const int group = a.n_head / kv.n_head_kv;
  const int hd = a.head_dim;
  const int ni = hd / 32;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int32_t n = t.positions[token] + 1;
  const int32_t begin = split * kChunk;
  const int32_t end = min(n, begin + kChunk);
  const int64_t stride = hd + 2;
  auto partial_of = [&](int g) {
    const int64_t qh = static_cast<int64_t>(kv_head) * group + g;
    return partial + ((token * a.n_head + qh) * n_splits + split) * stride;
  };
  if (begin >= n) {  // past this token's context: an empty chunk
    if (threadIdx.x < group) {
      float* p = partial_of(threadIdx.x);
      p[0] = -INFINITY;
      p[1] = 0.0f;
    }
    return;
  }
  float q[kMaxGroup][kMaxHeadDim / 32];
  float acc[kMaxGroup][kMaxHeadDim / 32];
  float m[kMaxGroup], l[kMaxGroup];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    m[g] = -INFINITY;
    l[g] = 0.0f;
#pragma unroll
    for (int i = 0; i < kMaxHeadDim / 32; ++i) {
      acc[g][i] = 0.0f;
      q[g][i] = 0.0f;
      if (g < group && i < ni) {
        q[g][i] = a.q[(token * a.n_head + kv_head * group + g) * hd + lane + 32 * i];
      }
    }
  }
  for (int32_t p = begin + warp; p < end; p += kWarps) {
    const size_t row = PageRow(kv, t, token, p, kv_head);
    const uint8_t* krow = kv.k + row * kv.k_row_bytes;
    const uint8_t* vrow = kv.v + row * kv.v_row_bytes;
    float k[kMaxHeadDim / 32], v[kMaxHeadDim / 32];
#pragma unroll
    for (int i = 0; i < kMaxHeadDim / 32; ++i) {
      k[i] = i < ni ? KvElement(kv.k_type, krow, lane + 32 * i) : 0.0f;
      v[i] = i < ni ? KvElement(kv.v_type, vrow, lane + 32 * i) : 0.0f;
    }
#pragma unroll
    for (int g = 0; g < kMaxGroup; ++g) {
      if (g >= group) break;
      float s = 0.0f;
#pragma unroll
      for (int i = 0; i < kMaxHeadDim / 32; ++i) s += q[g][i] * k[i];
      for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
      s *= a.scale;
      const float m_new = fmaxf(m[g], s);
      const float c = expf(m[g] - m_new);
      const float e = expf(s - m_new);
      l[g] = l[g] * c + e;
#pragma unroll
      for (int i = 0; i < kMaxHeadDim / 32; ++i) acc[g][i] = acc[g][i] * c + e * v[i];
      m[g] = m_new;
    }
  }
  __shared__ float sm_m[kWarps][kMaxGroup];
  __shared__ float sm_l[kWarps][kMaxGroup];
  __shared__ float sm_acc[kWarps][kMaxGroup][kMaxHeadDim];
#pragma unroll
  for (int g = 0; g < kMaxGroup; ++g) {
    if (g >= group) break;
    if (lane == 0) {
      sm_m[warp][g] = m[g];
      sm_l[warp][g] = l[g];
    }
#pragma unroll
    for (int i = 0; i < kMaxHeadDim / 32; ++i) {
      if (i < ni) sm_acc[warp][g][lane + 32 * i] = acc[g][i];
    }
  }
  __syncthreads();
  // Thread x merges dimension x % hd of query head x / hd, for all warps.
  for (int x = threadIdx.x; x < group * hd; x += kThreads) {
    const int g = x / hd, d = x % hd;
    float mm = -INFINITY;
    for (int w = 0; w < kWarps; ++w) mm = fmaxf(mm, sm_m[w][g]);
    float sum_l = 0.0f, sum_acc = 0.0f;
    for (int w = 0; w < kWarps; ++w) {
      if (sm_l[w][g] == 0.0f) continue;  // a warp that saw no position
      const float c = expf(sm_m[w][g] - mm);
      sum_l += sm_l[w][g] * c;
      sum_acc += sm_acc[w][g][d] * c;
    }
    float* out = partial_of(g);
    if (d == 0) {
      out[0] = mm;
      out[1] = sum_l;
    }
    out[2 + d] = sum_acc;
  }
}

// One warp per (token, query head), lanes holding dimensions lane,
// lane + 32, ...: merges the chunks, normalises, and rotates the output back
// where V is stored rotated (lane 0, on the row in shared memory).
__global__ void __launch_bounds__(kThreads)
    CombineKernel(AttentionArgs a, StepTokens t, const float* partial, int n_splits) {
  __shared__ float rows[kWarps][kMaxHeadDim];
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t i = static_cast<int64_t>(blockIdx.x) * kWarps + warp;
  if (i >= t.n_tokens * a.n_head) return;  // whole warps leave together
  const int hd = a.head_dim;
  const int ni = hd / 32;
  const int64_t stride = hd + 2;
  const float* p = partial + i * n_splits * stride;
  const int used = (t.positions[i / a.n_head] + kChunk) / kChunk;  // chunks with positions
  float mm = -INFINITY;
  for (int s = 0; s < used; ++s) mm = fmaxf(mm, p[s * stride]);
  float acc[kMaxHeadDim / 32];
#pragma unroll
  for (int k = 0; k < kMaxHeadDim / 32; ++k) acc[k] = 0.0f;
  float sum_l = 0.0f;
  for (int s = 0; s < used; ++s) {
    const float c = expf(p[s * stride] - mm);
    sum_l += p[s * stride + 1] * c;
#pragma unroll
    for (int k = 0; k < kMaxHeadDim / 32; ++k) {
      if (k < ni) acc[k] += p[s * stride + 2 + lane + 32 * k] * c;
    }
  }
  float* row = rows[warp];
#pragma unroll
  for (int k = 0; k < kMaxHeadDim / 32; ++k) {
    if (k < ni) row[lane + 32 * k] = acc[k] / sum_l;
  }
  __syncwarp();
  if (a.v_rotated && lane == 0) Hadamard(row, hd);
  __syncwarp();
  float* out = a.out + i * hd;
  for (int d = lane; d < hd; d += 32) out[d] = row[d];
}

// Tiled attention for prefill: block (tile, kv head) computes TiledRows(HD)
// query rows: consecutive tokens of one sequence times the `group` query
// heads of one KV head. It walks the context in tiles of TiledPositions(HD)
// positions: each K and V row is decoded once into shared memory and serves
// every query row of the block (the split-K kernel reads it once per
// token). Per tile: scores of every (row, position) pair, the causal mask,
// each row's online-softmax update, then the outputs.
//
// Thread (tx = id % 8, ty = id / 8) computes the scores of rows ty + 16j and
// positions tx + 8k, and the outputs of rows ty + 16j at dimensions tx + 8m,
// in registers: each value read from shared memory feeds several products,
// and the products of one thread are independent of each other. Shared rows
// are padded by one float so that the 8 or 4 rows a warp reads at once fall
// in different banks.
__host__ __device__ constexpr int TiledRows(int head_dim) {
  return 4096 / head_dim < 64 ? 4096 / head_dim : 64;
}
__host__ __device__ constexpr int TiledPositions(int head_dim) {
  return 2048 / head_dim < 32 ? 2048 / head_dim : 32;
}

template <int HD>
__global__ void __launch_bounds__(kThreads)
    AttentionTiledKernel(AttentionArgs a, PagedKv kv, StepTokens t) {
  constexpr int kRows = TiledRows(HD);
  constexpr int kPos = TiledPositions(HD);
  constexpr int kRowsPer = kRows / 16;  // ty + 16j
  constexpr int kPosPer = kPos / 8;     // tx + 8k
  constexpr int kDimsPer = HD / 8;      // tx + 8m
  constexpr int kRowStride = HD + 1;
  constexpr int kScoreStride = kPos + 1;
  static_assert(kThreads == 128 && kRows % 16 == 0 && kPos % 8 == 0);
  __shared__ float sq[kRows * kRowStride];
  __shared__ float sk[kPos * kRowStride];
  __shared__ float sv[kPos * HD];
  __shared__ float ss[kRows * kScoreStride];
  __shared__ float sm[kRows], sl[kRows], sc[kRows];
  __shared__ int32_t spos[kRows];
  __shared__ int32_t s_context;

  const int group = a.n_head / kv.n_head_kv;
  const int kv_head = blockIdx.y;
  const int tile_tokens = kRows / group;
  const int64_t t0 = static_cast<int64_t>(blockIdx.x) * tile_tokens;
  const int nt = static_cast<int>(min(static_cast<int64_t>(tile_tokens), t.n_tokens - t0));
  const int rows =
      nt * group;  // row r: token t0 + r / group, query head kv_head * group + r % group
  const int tx = threadIdx.x % 8, ty = threadIdx.x / 8;

  auto q_offset = [&](int r) {
    return ((t0 + r / group) * a.n_head + kv_head * group + r % group) * static_cast<int64_t>(HD);
  };
  for (int i = threadIdx.x; i < rows * HD; i += kThreads) {
    sq[(i / HD) * kRowStride + i % HD] = a.q[q_offset(i / HD) + i % HD];
  }
  if (threadIdx.x < nt) spos[threadIdx.x] = t.positions[t0 + threadIdx.x];
  if (threadIdx.x < rows) {
    sm[threadIdx.x] = -INFINITY;
    sl[threadIdx.x] = 0.0f;
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    int32_t n = 0;
    for (int i = 0; i < nt; ++i) n = max(n, spos[i] + 1);
    s_context = n;
  }
  __syncthreads();
  const int32_t context = s_context;
  const int32_t* table = t.tables + t.table_offset[t0];

  float acc[kRowsPer][kDimsPer];
#pragma unroll
  for (int j = 0; j < kRowsPer; ++j) {
#pragma unroll
    for (int m = 0; m < kDimsPer; ++m) acc[j][m] = 0.0f;
  }

  for (int32_t base = 0; base < context; base += kPos) {
    // K and V rows of positions [base, base + kPos), decoded.
    for (int i = threadIdx.x; i < kPos * HD; i += kThreads) {
      const int p = i / HD, d = i % HD;
      const int32_t pos = base + p;
      float kval = 0.0f, vval = 0.0f;
      if (pos < context) {
        const int32_t block = table[pos / kv.block_size];
        const size_t row =
            (static_cast<size_t>(block) * kv.block_size + pos % kv.block_size) * kv.n_head_kv +
            kv_head;
        kval = KvElement(kv.k_type, kv.k + row * kv.k_row_bytes, d);
        vval = KvElement(kv.v_type, kv.v + row * kv.v_row_bytes, d);
      }
      sk[p * kRowStride + d] = kval;
      sv[p * HD + d] = vval;
    }
    __syncthreads();
    // Scores (rows past `rows` compute on stale values and are not kept).
    {
      float dot[kRowsPer][kPosPer];
#pragma unroll
      for (int j = 0; j < kRowsPer; ++j) {
#pragma unroll
        for (int k = 0; k < kPosPer; ++k) dot[j][k] = 0.0f;
      }
#pragma unroll 8
      for (int d = 0; d < HD; ++d) {
        float qv[kRowsPer], kv_[kPosPer];
#pragma unroll
        for (int j = 0; j < kRowsPer; ++j) qv[j] = sq[(ty + 16 * j) * kRowStride + d];
#pragma unroll
        for (int k = 0; k < kPosPer; ++k) kv_[k] = sk[(tx + 8 * k) * kRowStride + d];
#pragma unroll
        for (int j = 0; j < kRowsPer; ++j) {
#pragma unroll
          for (int k = 0; k < kPosPer; ++k) dot[j][k] = fmaf(qv[j], kv_[k], dot[j][k]);
        }
      }
#pragma unroll
      for (int j = 0; j < kRowsPer; ++j) {
        const int r = ty + 16 * j;
        if (r >= rows) continue;
        const int32_t own = spos[r / group];
#pragma unroll
        for (int k = 0; k < kPosPer; ++k) {
          const int p = tx + 8 * k;
          ss[r * kScoreStride + p] = base + p <= own ? dot[j][k] * a.scale : -INFINITY;
        }
      }
    }
    __syncthreads();
    // Each row's softmax state; the scores become their weights.
    if (threadIdx.x < rows) {
      const int r = threadIdx.x;
      float* sr = ss + r * kScoreStride;
      float mx = -INFINITY;
      for (int p = 0; p < kPos; ++p) mx = fmaxf(mx, sr[p]);
      const float m_old = sm[r];
      const float m_new = fmaxf(m_old, mx);
      float c = 1.0f, sum = 0.0f;
      if (m_new != -INFINITY) {
        c = expf(m_old - m_new);
        for (int p = 0; p < kPos; ++p) {
          const float e = expf(sr[p] - m_new);
          sr[p] = e;
          sum += e;
        }
      } else {
        for (int p = 0; p < kPos; ++p) sr[p] = 0.0f;
      }
      sl[r] = sl[r] * c + sum;
      sm[r] = m_new;
      sc[r] = c;
    }
    __syncthreads();
    // Outputs.
#pragma unroll
    for (int j = 0; j < kRowsPer; ++j) {
      const int r = ty + 16 * j;
      const float c = r < rows ? sc[r] : 0.0f;
#pragma unroll
      for (int m = 0; m < kDimsPer; ++m) acc[j][m] *= c;
    }
#pragma unroll 4
    for (int p = 0; p < kPos; ++p) {
      float vv[kDimsPer];
#pragma unroll
      for (int m = 0; m < kDimsPer; ++m) vv[m] = sv[p * HD + tx + 8 * m];
#pragma unroll
      for (int j = 0; j < kRowsPer; ++j) {
        const float w = ss[(ty + 16 * j) * kScoreStride + p];
#pragma unroll
        for (int m = 0; m < kDimsPer; ++m) acc[j][m] = fmaf(w, vv[m], acc[j][m]);
      }
    }
    __syncthreads();  // the next tile overwrites sk, sv and ss
  }

  // Normalise into shared memory; rotate back where V is stored rotated (a
  // thread per row); write.
#pragma unroll
  for (int j = 0; j < kRowsPer; ++j) {
    const int r = ty + 16 * j;
    if (r >= rows) continue;
#pragma unroll
    for (int m = 0; m < kDimsPer; ++m) sq[r * kRowStride + tx + 8 * m] = acc[j][m] / sl[r];
  }
  __syncthreads();
  if (a.v_rotated) {
    if (threadIdx.x < rows) Hadamard(sq + threadIdx.x * kRowStride, HD);
    __syncthreads();
  }
  for (int i = threadIdx.x; i < rows * HD; i += kThreads) {
    a.out[q_offset(i / HD) + i % HD] = sq[(i / HD) * kRowStride + i % HD];
  }
}

unsigned Blocks(int64_t n) { return static_cast<unsigned>((n + kThreads - 1) / kThreads); }

bool SplitKTakes(const AttentionArgs& a, const PagedKv& kv) {
  const int group = a.n_head / kv.n_head_kv;
  return a.head_dim % 32 == 0 && a.head_dim <= kMaxHeadDim && group <= kMaxGroup;
}

int Splits(int max_context) { return (max_context + kChunk - 1) / kChunk; }

bool TiledTakes(const AttentionArgs& a, const PagedKv& kv) {
  const int hd = a.head_dim;
  const int group = a.n_head / kv.n_head_kv;
  return (hd == 32 || hd == 64 || hd == 128 || hd == 256) && group >= 1 && group <= TiledRows(hd);
}

}  // namespace

void WriteKv(const KvWrite& w, const PagedKv& kv, const StepTokens& t, Stream stream) {
  const int64_t n = t.n_tokens * (w.n_head + kv.n_head_kv);
  if (n == 0) return;
  WriteKvKernel<<<Blocks(n * 32), kThreads, 0, S(stream)>>>(w, kv, t);
}

void AttentionPlain(const AttentionArgs& a, const PagedKv& kv, const StepTokens& t, Stream stream) {
  const int64_t n = t.n_tokens * a.n_head;
  if (n == 0) return;
  AttentionPlainKernel<<<Blocks(n), kThreads, 0, S(stream)>>>(a, kv, t);
}

bool AttentionTiled(const AttentionArgs& a, const PagedKv& kv, const StepTokens& t, Stream stream) {
  if (!TiledTakes(a, kv)) return false;
  if (t.n_tokens == 0) return true;
  const int tile_tokens = TiledRows(a.head_dim) / (a.n_head / kv.n_head_kv);
  const dim3 grid(static_cast<unsigned>((t.n_tokens + tile_tokens - 1) / tile_tokens),
                  static_cast<unsigned>(kv.n_head_kv));
  switch (a.head_dim) {
    case 32:
      AttentionTiledKernel<32><<<grid, kThreads, 0, S(stream)>>>(a, kv, t);
      break;
    case 64:
      AttentionTiledKernel<64><<<grid, kThreads, 0, S(stream)>>>(a, kv, t);
      break;
    case 128:
      AttentionTiledKernel<128><<<grid, kThreads, 0, S(stream)>>>(a, kv, t);
      break;
    default:
      AttentionTiledKernel<256><<<grid, kThreads, 0, S(stream)>>>(a, kv, t);
      break;
  }
  return true;
}

int64_t AttentionScratchFloats(int64_t n_tokens, int n_head, int head_dim, int max_context) {
  return n_tokens * n_head * static_cast<int64_t>(Splits(max_context)) * (head_dim + 2);
}

void AttentionSplitK(const AttentionArgs& a, const PagedKv& kv, const StepTokens& t, float* scratch,
                     int64_t scratch_floats, Stream stream) {
  if (t.n_tokens == 0) return;
  const int64_t per_token = AttentionScratchFloats(1, a.n_head, a.head_dim, t.max_context);
  if (!SplitKTakes(a, kv) || per_token > scratch_floats) {
    AttentionPlain(a, kv, t, stream);
    return;
  }
  const int n_splits = Splits(t.max_context);
  const int64_t piece = std::min<int64_t>(scratch_floats / per_token, 65535);  // grid.z
  for (int64_t t0 = 0; t0 < t.n_tokens; t0 += piece) {
    AttentionArgs pa = a;
    StepTokens pt = t;
    const int64_t offset = t0 * a.n_head * a.head_dim;
    pa.q += offset;
    pa.out += offset;
    pt.positions += t0;
    pt.table_offset += t0;
    pt.n_tokens = t.n_tokens - t0 < piece ? t.n_tokens - t0 : piece;
    const dim3 grid(static_cast<unsigned>(n_splits), static_cast<unsigned>(kv.n_head_kv),
                    static_cast<unsigned>(pt.n_tokens));
    AttentionSplitKKernel<<<grid, kThreads, 0, S(stream)>>>(pa, kv, pt, scratch, n_splits);
    CombineKernel<<<Blocks(pt.n_tokens * a.n_head * 32), kThreads, 0, S(stream)>>>(pa, pt, scratch,
                                                                                   n_splits);
  }
}

}  // namespace kvmesh::cuda
