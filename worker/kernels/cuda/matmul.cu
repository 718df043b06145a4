// Matrix kernels: the plain reference, the decode mat-vecs, and the
// conversions that feed the tensor-core GEMM of prefill (cuBLAS, called by
// the executor).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "worker/kernels/cuda/ops.h"

namespace kvmesh::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kMatVecWarps = 4;  // output rows per block of the mat-vecs

cudaStream_t S(Stream s) { return static_cast<cudaStream_t>(s); }
unsigned Blocks(int64_t n, int per_block = kThreads) {
  return static_cast<unsigned>((n + per_block - 1) / per_block);
}

template <TensorType T>
__global__ void MatMulPlainKernel(DeviceMatrix w, const float* x, int64_t rows, float* y,
                                  int64_t ldy) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= rows * w.n_out) return;
  const int64_t r = i / w.n_out, o = i % w.n_out;
  const uint8_t* wr = w.data + static_cast<size_t>(o) * w.row_bytes;
  const float* xr = x + r * w.n_in;
  float sum = 0.0f;
  for (int64_t k = 0; k < w.n_in; ++k) sum += RowElement<T>(wr, k) * xr[k];
  y[r * ldy + o] = sum;
}

// One warp per group, a lane per value: the same arithmetic as QuantizeAct
// (block_math.h), whose maximum and integer sum do not depend on order.
__global__ void QuantizeActivationsKernel(const float* x, int64_t groups, ActQ8* out) {
  static_assert(kGroup == 32);
  const int64_t g = (blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (g >= groups) return;  // whole warps leave together
  const float v = x[g * kGroup + lane];
  float amax = fabsf(v);
  for (int offset = 16; offset > 0; offset /= 2) {
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
  }
  const float d = amax / 127.0f;
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  const int q = static_cast<int>(roundf(v * inv));
  out[g].qs[lane] = static_cast<int8_t>(q);
  int sum = q;
  for (int offset = 16; offset > 0; offset /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  if (lane == 0) {
    out[g].d = d;
    out[g].sum = sum;
  }
}

__device__ __forceinline__ float WarpSum(float v) {
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

// One warp per weight row; lane l takes groups l, l+32, ... so a warp reads
// 32 consecutive blocks at a time, each once for every activation row.
template <TensorType T, int kRows>
__global__ void __launch_bounds__(kMatVecWarps * 32)
    MatVecQ8Kernel(DeviceMatrix w, const ActQ8* xq, int rows, float* y, int64_t ldy) {
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kMatVecWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (o >= w.n_out) return;
  const int64_t groups = w.n_in / kGroup;
  const uint8_t* wr = w.data + static_cast<size_t>(o) * w.row_bytes;
  float acc[kRows] = {};
  // Unrolled so that the loads of several groups are in flight at once (the
  // sums keep their order).
#pragma unroll 4
  for (int64_t g = lane; g < groups; g += 32) {
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      if (r < rows) acc[r] += DotGroup<T>(wr, g, xq[r * groups + g]);
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r < rows) {
      const float sum = WarpSum(acc[r]);
      if (lane == 0) y[r * ldy + o] = sum;
    }
  }
}

// Float weights: 16-byte loads of 8 halves (F16, BF16) where rows allow it,
// element by element otherwise (F32, odd widths).
template <TensorType T>
__device__ __forceinline__ void Unpack8(const uint4& raw, float* out) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(&raw);
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    out[j] = T == TensorType::kF16 ? __half2float(__ushort_as_half(h[j]))
                                   : __bfloat162float(__ushort_as_bfloat16(h[j]));
  }
}

template <TensorType T, bool kVector, int kRows>
__global__ void __launch_bounds__(kMatVecWarps * 32)
    MatVecFloatKernel(DeviceMatrix w, const float* x, int rows, float* y, int64_t ldy) {
  const int64_t o = static_cast<int64_t>(blockIdx.x) * kMatVecWarps + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (o >= w.n_out) return;
  const uint8_t* wr = w.data + static_cast<size_t>(o) * w.row_bytes;
  float acc[kRows] = {};
  if constexpr (kVector) {
    const uint4* w8 = reinterpret_cast<const uint4*>(wr);
    for (int64_t c = lane; c < w.n_in / 8; c += 32) {
      float wv[8];
      Unpack8<T>(w8[c], wv);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < rows) {
          const float4* x4 = reinterpret_cast<const float4*>(x + r * w.n_in + c * 8);
          const float4 a = x4[0], b = x4[1];
          acc[r] += wv[0] * a.x + wv[1] * a.y + wv[2] * a.z + wv[3] * a.w + wv[4] * b.x +
                    wv[5] * b.y + wv[6] * b.z + wv[7] * b.w;
        }
      }
    }
  } else {
    for (int64_t k = lane; k < w.n_in; k += 32) {
      const float wk = RowElement<T>(wr, k);
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r < rows) acc[r] += wk * x[r * w.n_in + k];
      }
    }
  }
#pragma unroll
  for (int r = 0; r < kRows; ++r) {
    if (r < rows) {
      const float sum = WarpSum(acc[r]);
      if (lane == 0) y[r * ldy + o] = sum;
    }
  }
}

__device__ __forceinline__ uint16_t To16(float v, bool bf16) {
  return bf16 ? __bfloat16_as_ushort(__float2bfloat16_rn(v)) : __half_as_ushort(__float2half_rn(v));
}

template <TensorType T>
__global__ void DequantizeRowsKernel(DeviceMatrix w, int64_t row_begin, int64_t count, bool bf16,
                                     uint16_t* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i >= count * w.n_in) return;
  const int64_t r = i / w.n_in, k = i % w.n_in;
  out[i] = To16(RowElement<T>(w.data + static_cast<size_t>(row_begin + r) * w.row_bytes, k), bf16);
}

// The same, eight consecutive values per thread (rows a multiple of 8
// wide): one index division per eight values and one 16-byte store, where
// the kernel above divides and stores per value.
template <TensorType T>
__global__ void DequantizeRows8Kernel(DeviceMatrix w, int64_t row_begin, int64_t count, bool bf16,
                                      uint16_t* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;  // 8 values each
  const int64_t per_row = w.n_in / 8;
  if (i >= count * per_row) return;
  const int64_t r = i / per_row, k0 = (i - r * per_row) * 8;
  const uint8_t* row = w.data + static_cast<size_t>(row_begin + r) * w.row_bytes;
  alignas(16) uint16_t v[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) v[j] = To16(RowElement<T>(row, k0 + j), bf16);
  reinterpret_cast<uint4*>(out)[i] = *reinterpret_cast<const uint4*>(v);
}

__global__ void ConvertKernel(const float* x, int64_t n, bool bf16, uint16_t* out) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = To16(x[i], bf16);
}

}  // namespace

// Dispatches a kernel template over the weight types (returns for others,
// which the executor refuses when it is built).
#define KVMESH_FOR_WEIGHT_TYPE(type, CASE) \
  switch (type) {                          \
    CASE(TensorType::kF32)                 \
    CASE(TensorType::kF16)                 \
    CASE(TensorType::kBF16)                \
    CASE(TensorType::kQ8_0)                \
    CASE(TensorType::kQ4_0)                \
    CASE(TensorType::kQ4_K)                \
    CASE(TensorType::kQ5_K)                \
    CASE(TensorType::kQ6_K)                \
    default:                               \
      return;                              \
  }

void MatMulPlain(const DeviceMatrix& w, const float* x, int64_t rows, float* y, int64_t ldy,
                 Stream stream) {
  if (rows * w.n_out == 0) return;
  const unsigned blocks = Blocks(rows * w.n_out);
#define CASE(T)                                                                   \
  case T:                                                                         \
    MatMulPlainKernel<T><<<blocks, kThreads, 0, S(stream)>>>(w, x, rows, y, ldy); \
    return;
  KVMESH_FOR_WEIGHT_TYPE(w.type, CASE)
#undef CASE
}

void QuantizeActivations(const float* x, int64_t rows, int64_t n_in, ActQ8* out, Stream stream) {
  const int64_t groups = rows * (n_in / kGroup);
  if (groups == 0) return;
  QuantizeActivationsKernel<<<Blocks(groups * 32), kThreads, 0, S(stream)>>>(x, groups, out);
}

namespace {

// A mat-vec kernel for `rows` activation rows: the smallest of 8, 16 and 32
// rows that holds them (its accumulators are registers).
template <int kRows>
void LaunchMatVecQ8(const DeviceMatrix& w, const ActQ8* xq, int r, float* y, int64_t ldy,
                    cudaStream_t s) {
  const unsigned blocks = Blocks(w.n_out, kMatVecWarps);
#define CASE(T)                                                                      \
  case T:                                                                            \
    MatVecQ8Kernel<T, kRows><<<blocks, kMatVecWarps * 32, 0, s>>>(w, xq, r, y, ldy); \
    return;
  switch (w.type) {
    CASE(TensorType::kQ8_0)
    CASE(TensorType::kQ4_0)
    CASE(TensorType::kQ4_K)
    CASE(TensorType::kQ5_K)
    CASE(TensorType::kQ6_K)
    default:
      return;
  }
#undef CASE
}

template <int kRows>
void LaunchMatVecFloat(const DeviceMatrix& w, const float* x, int r, float* y, int64_t ldy,
                       cudaStream_t s) {
  const unsigned blocks = Blocks(w.n_out, kMatVecWarps);
  const bool vector = w.n_in % 8 == 0 && w.row_bytes % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(w.data) % 16 == 0 &&
                      reinterpret_cast<uintptr_t>(x) % 16 == 0;
  switch (w.type) {
    case TensorType::kF32:
      MatVecFloatKernel<TensorType::kF32, false, kRows>
          <<<blocks, kMatVecWarps * 32, 0, s>>>(w, x, r, y, ldy);
      return;
    case TensorType::kF16:
      if (vector) {
        MatVecFloatKernel<TensorType::kF16, true, kRows>
            <<<blocks, kMatVecWarps * 32, 0, s>>>(w, x, r, y, ldy);
      } else {
        MatVecFloatKernel<TensorType::kF16, false, kRows>
            <<<blocks, kMatVecWarps * 32, 0, s>>>(w, x, r, y, ldy);
      }
      return;
    case TensorType::kBF16:
      if (vector) {
        MatVecFloatKernel<TensorType::kBF16, true, kRows>
            <<<blocks, kMatVecWarps * 32, 0, s>>>(w, x, r, y, ldy);
      } else {
        MatVecFloatKernel<TensorType::kBF16, false, kRows>
            <<<blocks, kMatVecWarps * 32, 0, s>>>(w, x, r, y, ldy);
      }
      return;
    default:
      return;
  }
}

// Calls f with the smallest kernel row count (8, 16 or 32) that holds `rows`,
// as a std::integral_constant.
template <typename F>
void ForRowBucket(int rows, F&& f) {
  if (rows <= 8) {
    f(std::integral_constant<int, 8>{});
  } else if (rows <= 16) {
    f(std::integral_constant<int, 16>{});
  } else {
    f(std::integral_constant<int, 32>{});
  }
}

}  // namespace

void MatVecQ8(const DeviceMatrix& w, const ActQ8* xq, int64_t rows, float* y, int64_t ldy,
              Stream stream) {
  if (rows == 0 || w.n_out == 0 || rows > kMaxMatVecRows) return;
  ForRowBucket(static_cast<int>(rows), [&](auto bucket) {
    LaunchMatVecQ8<decltype(bucket)::value>(w, xq, static_cast<int>(rows), y, ldy, S(stream));
  });
}

void MatVecFloat(const DeviceMatrix& w, const float* x, int64_t rows, float* y, int64_t ldy,
                 Stream stream) {
  if (rows == 0 || w.n_out == 0 || rows > kMaxMatVecRows) return;
  ForRowBucket(static_cast<int>(rows), [&](auto bucket) {
    LaunchMatVecFloat<decltype(bucket)::value>(w, x, static_cast<int>(rows), y, ldy, S(stream));
  });
}

void DequantizeRows(const DeviceMatrix& w, int64_t row_begin, int64_t count, bool bf16,
                    uint16_t* out, Stream stream) {
  if (count * w.n_in == 0) return;
  if (w.n_in % 8 == 0 && reinterpret_cast<uintptr_t>(out) % 16 == 0) {
    const unsigned blocks8 = Blocks(count * (w.n_in / 8));
#define CASE(T)                                                                                    \
  case T:                                                                                          \
    DequantizeRows8Kernel<T><<<blocks8, kThreads, 0, S(stream)>>>(w, row_begin, count, bf16, out); \
    return;
    KVMESH_FOR_WEIGHT_TYPE(w.type, CASE)
#undef CASE
  }
  const unsigned blocks = Blocks(count * w.n_in);
#define CASE(T)                                                                                  \
  case T:                                                                                        \
    DequantizeRowsKernel<T><<<blocks, kThreads, 0, S(stream)>>>(w, row_begin, count, bf16, out); \
    return;
  KVMESH_FOR_WEIGHT_TYPE(w.type, CASE)
#undef CASE
}

void ConvertActivations(const float* x, int64_t n, bool bf16, uint16_t* out, Stream stream) {
  if (n == 0) return;
  ConvertKernel<<<Blocks(n), kThreads, 0, S(stream)>>>(x, n, bf16, out);
}

}  // namespace kvmesh::cuda
