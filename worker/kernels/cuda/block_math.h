// The per-block arithmetic of the CUDA kernels, written once as
// __host__ __device__ functions so that it compiles into the kernels and into
// ordinary CPU tests (block_math_test.cc). A machine without a GPU therefore
// still checks, against the CPU reference kernels, every bit-level rule the
// device relies on:
//
//  - reading one element of a weight row in its GGUF type (F32, F16, BF16,
//    Q8_0, Q4_0, Q4_K, Q5_K, Q6_K): bit-exact with the CPU's to_float;
//  - the decode mat-vec's dot product of 32 weights with 32 activations
//    quantized to 8 bits (ActQ8), four bytes per integer dot (dp4a);
//  - writing one K or V row into a page (f32, f16, bf16, q8_0, q4_0 with
//    either rounding, q3_nl), with centering and the Hadamard rotation: the same
//    bytes as the CPU's encoders for the same input, so pages move between
//    the CPU, the GPU and any tier unchanged. Kernels that call these are
//    compiled without FMA contraction (-fmad=false), as the CPU code is.
//
// Only what the device can execute lives here: no allocation, no CHECKs.
#pragma once

#include <math.h>

#include <cstdint>
#include <cstring>

#include "common/tensor_type.h"
#include "worker/kernels/cpu/block_types.h"

#if defined(__CUDACC__)
#define KVMESH_HD __host__ __device__ __forceinline__
#else
#define KVMESH_HD inline
#endif

namespace kvmesh::cuda {

using kernels::BlockQ3_NL;
using kernels::BlockQ4_0;
using kernels::BlockQ4_K;
using kernels::BlockQ5_K;
using kernels::BlockQ6_K;
using kernels::BlockQ8_0;

inline constexpr int kGroup = 32;        // elements per activation block
inline constexpr int kSuperBlock = 256;  // K-quant super-block

// --- floats ----------------------------------------------------------------

KVMESH_HD uint32_t FloatBits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return b;
#endif
}

KVMESH_HD float BitsFloat(uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(b);
#else
  float f;
  std::memcpy(&f, &b, sizeof f);
  return f;
#endif
}

// The conversions of common/half.h (round to nearest even), usable on the
// device. block_math_test checks them against it on every half and on
// millions of floats.
KVMESH_HD float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0) {
    if (mantissa == 0) return BitsFloat(sign);
    int shift = 0;
    while ((mantissa & 0x400u) == 0) {
      mantissa <<= 1;
      ++shift;
    }
    mantissa &= 0x3ffu;
    const uint32_t exp32 = static_cast<uint32_t>(127 - 15 + 1 - shift);
    return BitsFloat(sign | (exp32 << 23) | (mantissa << 13));
  }
  if (exponent == 0x1f) return BitsFloat(sign | 0x7f800000u | (mantissa << 13));
  return BitsFloat(sign | ((exponent + 127 - 15) << 23) | (mantissa << 13));
}

KVMESH_HD uint16_t FloatToHalf(float f) {
  const uint32_t x = FloatBits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) {
    const uint32_t nan_bit = abs > 0x7f800000u ? 0x200u : 0u;
    return static_cast<uint16_t>(sign | 0x7c00u | nan_bit | ((abs >> 13) & 0x3ffu));
  }
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  if (abs < 0x38800000u) {
    if (abs < 0x33000000u) return static_cast<uint16_t>(sign);
    const uint32_t exponent = abs >> 23;
    const uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126 - exponent;
    uint32_t half_mant = mantissa >> shift;
    const uint32_t rem = mantissa & ((1u << shift) - 1);
    const uint32_t halfway = 1u << (shift - 1);
    if (rem > halfway || (rem == halfway && (half_mant & 1u))) ++half_mant;
    return static_cast<uint16_t>(sign | half_mant);
  }
  uint32_t result = ((abs >> 13) - ((127 - 15) << 10));
  const uint32_t rem = abs & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (result & 1u))) ++result;
  return static_cast<uint16_t>(sign | result);
}

KVMESH_HD float Bf16ToFloat(uint16_t b) { return BitsFloat(static_cast<uint32_t>(b) << 16); }

KVMESH_HD uint16_t FloatToBf16(float f) {
  uint32_t x = FloatBits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 64u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

// --- integer helpers --------------------------------------------------------

// Four bytes from a 2-byte aligned address (quant blocks of 18, 34 and 210
// bytes leave their arrays only 2-byte aligned), little-endian.
KVMESH_HD int LoadInt2(const uint8_t* p) {
  const uint16_t* h = reinterpret_cast<const uint16_t*>(p);
  return static_cast<int>(static_cast<uint32_t>(h[0]) | static_cast<uint32_t>(h[1]) << 16);
}

KVMESH_HD int LoadInt4(const uint8_t* p) { return *reinterpret_cast<const int*>(p); }

// c + the dot product of the four signed bytes of a and of b.
KVMESH_HD int Dp4a(int a, int b, int c) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 610
  return __dp4a(a, b, c);
#else
  for (int i = 0; i < 4; ++i) {
    c += static_cast<int8_t>(static_cast<uint32_t>(a) >> (8 * i)) *
         static_cast<int8_t>(static_cast<uint32_t>(b) >> (8 * i));
  }
  return c;
#endif
}

// (scale, min) of sub-block j of a Q4_K / Q5_K super-block (k_quant_common.h).
KVMESH_HD void ScaleMinK4(const uint8_t* packed, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = packed[j] & 63;
    *min = packed[j + 4] & 63;
  } else {
    *scale = (packed[j + 4] & 0x0F) | (packed[j - 4] >> 6) << 4;
    *min = (packed[j + 4] >> 4) | (packed[j] >> 6) << 4;
  }
}

// --- one weight element -----------------------------------------------------

// Element i of a weight row of type T, as the CPU's to_float computes it.
template <TensorType T>
KVMESH_HD float RowElement(const uint8_t* row, int64_t i);

template <>
KVMESH_HD float RowElement<TensorType::kF32>(const uint8_t* row, int64_t i) {
  return reinterpret_cast<const float*>(row)[i];
}

template <>
KVMESH_HD float RowElement<TensorType::kF16>(const uint8_t* row, int64_t i) {
  return HalfToFloat(reinterpret_cast<const uint16_t*>(row)[i]);
}

template <>
KVMESH_HD float RowElement<TensorType::kBF16>(const uint8_t* row, int64_t i) {
  return Bf16ToFloat(reinterpret_cast<const uint16_t*>(row)[i]);
}

template <>
KVMESH_HD float RowElement<TensorType::kQ8_0>(const uint8_t* row, int64_t i) {
  const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[i / 32];
  return b.qs[i % 32] * HalfToFloat(b.d);
}

template <>
KVMESH_HD float RowElement<TensorType::kQ4_0>(const uint8_t* row, int64_t i) {
  const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[i / 32];
  const int j = static_cast<int>(i % 32);
  const int level = j < 16 ? (b.qs[j] & 0x0F) : (b.qs[j - 16] >> 4);
  return (level - 8) * HalfToFloat(b.d);
}

// kernels::kQ3NlLevels[code], as a table the device can index.
KVMESH_HD int Q3NlLevel(int code) {
  const int levels[8] = {-127, -79, -45, -14, 14, 45, 79, 127};
  return levels[code];
}

template <>
KVMESH_HD float RowElement<TensorType::kQ3_NL>(const uint8_t* row, int64_t i) {
  const BlockQ3_NL& b = reinterpret_cast<const BlockQ3_NL*>(row)[i / 32];
  const int j = static_cast<int>(i % 32);
  const int code = ((b.ql[j % 8] >> (2 * (j / 8))) & 3) | (((b.qh[j / 8] >> (j % 8)) & 1) << 2);
  return static_cast<float>(Q3NlLevel(code)) * HalfToFloat(b.d);
}

template <>
KVMESH_HD float RowElement<TensorType::kQ4_K>(const uint8_t* row, int64_t i) {
  const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(row)[i / kSuperBlock];
  const int e = static_cast<int>(i % kSuperBlock);
  int scale, min;
  ScaleMinK4(b.scales, e / 32, &scale, &min);
  const uint8_t byte = b.qs[32 * (e / 64) + e % 32];
  const int level = (e % 64) < 32 ? byte & 0x0F : byte >> 4;
  const float sub_scale = HalfToFloat(b.d) * scale;
  const float sub_min = HalfToFloat(b.dmin) * min;
  return sub_scale * level - sub_min;
}

template <>
KVMESH_HD float RowElement<TensorType::kQ5_K>(const uint8_t* row, int64_t i) {
  const BlockQ5_K& b = reinterpret_cast<const BlockQ5_K*>(row)[i / kSuperBlock];
  const int e = static_cast<int>(i % kSuperBlock);
  const int j = e / 32, l = e % 32;
  int scale, min;
  ScaleMinK4(b.scales, j, &scale, &min);
  const uint8_t byte = b.qs[32 * (j / 2) + l];
  const int nibble = j % 2 == 0 ? byte & 0x0F : byte >> 4;
  const int level = nibble | ((b.qh[l] >> j) & 1) << 4;
  const float sub_scale = HalfToFloat(b.d) * scale;
  const float sub_min = HalfToFloat(b.dmin) * min;
  return sub_scale * level - sub_min;
}

template <>
KVMESH_HD float RowElement<TensorType::kQ6_K>(const uint8_t* row, int64_t i) {
  const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[i / kSuperBlock];
  const int e = static_cast<int>(i % kSuperBlock);
  const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
  const uint8_t low_byte = b.ql[64 * half + 32 * (quarter % 2) + l];
  const int low = quarter < 2 ? low_byte & 0x0F : low_byte >> 4;
  const int high = (b.qh[32 * half + l] >> (2 * quarter)) & 3;
  return HalfToFloat(b.d) * b.scales[e / 16] * ((low | high << 4) - 32);
}

// --- 8-bit activations and the decode dot products --------------------------

// 32 activations as d * qs[i], with sum = Σ qs[i] for the min and offset
// terms. 40 bytes, 4-byte aligned.
struct ActQ8 {
  float d;
  int32_t sum;
  int8_t qs[kGroup];
};
static_assert(sizeof(ActQ8) == 40);

// x[0..32) → one ActQ8 (absmax scaling, round half away from zero).
KVMESH_HD void QuantizeAct(const float* x, ActQ8* out) {
  float amax = 0.0f;
  for (int j = 0; j < kGroup; ++j) {
    const float a = fabsf(x[j]);
    amax = amax < a ? a : amax;
  }
  const float d = amax / 127.0f;
  const float inv = d != 0.0f ? 1.0f / d : 0.0f;
  int sum = 0;
  for (int j = 0; j < kGroup; ++j) {
    const int q = static_cast<int>(roundf(x[j] * inv));
    out->qs[j] = static_cast<int8_t>(q);
    sum += q;
  }
  out->d = d;
  out->sum = sum;
}

KVMESH_HD int ActInt(const ActQ8& a, int k) {
  return LoadInt4(reinterpret_cast<const uint8_t*>(a.qs) + 4 * k);
}

// Σ w[32g + i] · a[i] over one group g of a weight row, with the weight
// levels unpacked four at a time and multiplied as bytes. The result equals
// Σ RowElement · d·qs up to float rounding (block_math_test).
template <TensorType T>
KVMESH_HD float DotGroup(const uint8_t* row, int64_t g, const ActQ8& a);

template <>
KVMESH_HD float DotGroup<TensorType::kQ8_0>(const uint8_t* row, int64_t g, const ActQ8& a) {
  const BlockQ8_0& b = reinterpret_cast<const BlockQ8_0*>(row)[g];
  const uint8_t* qs = reinterpret_cast<const uint8_t*>(b.qs);
  int sumi = 0;
  for (int k = 0; k < 8; ++k) sumi = Dp4a(LoadInt2(qs + 4 * k), ActInt(a, k), sumi);
  return static_cast<float>(sumi) * (HalfToFloat(b.d) * a.d);
}

template <>
KVMESH_HD float DotGroup<TensorType::kQ4_0>(const uint8_t* row, int64_t g, const ActQ8& a) {
  const BlockQ4_0& b = reinterpret_cast<const BlockQ4_0*>(row)[g];
  int sumi = 0;
  for (int k = 0; k < 4; ++k) {
    const int v = LoadInt2(b.qs + 4 * k);
    sumi = Dp4a(v & 0x0F0F0F0F, ActInt(a, k), sumi);
    sumi = Dp4a((v >> 4) & 0x0F0F0F0F, ActInt(a, k + 4), sumi);
  }
  return static_cast<float>(sumi - 8 * a.sum) * (HalfToFloat(b.d) * a.d);
}

template <>
KVMESH_HD float DotGroup<TensorType::kQ4_K>(const uint8_t* row, int64_t g, const ActQ8& a) {
  const BlockQ4_K& b = reinterpret_cast<const BlockQ4_K*>(row)[g / 8];
  const int j = static_cast<int>(g % 8);
  const uint8_t* qs = b.qs + 32 * (j / 2);
  const int shift = 4 * (j % 2);
  int sumi = 0;
  for (int k = 0; k < 8; ++k) {
    const uint32_t v = static_cast<uint32_t>(LoadInt4(qs + 4 * k));
    sumi = Dp4a(static_cast<int>((v >> shift) & 0x0F0F0F0Fu), ActInt(a, k), sumi);
  }
  int scale, min;
  ScaleMinK4(b.scales, j, &scale, &min);
  return a.d * (HalfToFloat(b.d) * scale * static_cast<float>(sumi) -
                HalfToFloat(b.dmin) * min * static_cast<float>(a.sum));
}

template <>
KVMESH_HD float DotGroup<TensorType::kQ5_K>(const uint8_t* row, int64_t g, const ActQ8& a) {
  const BlockQ5_K& b = reinterpret_cast<const BlockQ5_K*>(row)[g / 8];
  const int j = static_cast<int>(g % 8);
  const uint8_t* qs = b.qs + 32 * (j / 2);
  const int shift = 4 * (j % 2);
  int sumi = 0;
  for (int k = 0; k < 8; ++k) {
    const uint32_t v = static_cast<uint32_t>(LoadInt4(qs + 4 * k));
    const uint32_t h = static_cast<uint32_t>(LoadInt4(b.qh + 4 * k));
    const uint32_t level = ((v >> shift) & 0x0F0F0F0Fu) | ((h >> j) & 0x01010101u) << 4;
    sumi = Dp4a(static_cast<int>(level), ActInt(a, k), sumi);
  }
  int scale, min;
  ScaleMinK4(b.scales, j, &scale, &min);
  return a.d * (HalfToFloat(b.d) * scale * static_cast<float>(sumi) -
                HalfToFloat(b.dmin) * min * static_cast<float>(a.sum));
}

template <>
KVMESH_HD float DotGroup<TensorType::kQ6_K>(const uint8_t* row, int64_t g, const ActQ8& a) {
  const BlockQ6_K& b = reinterpret_cast<const BlockQ6_K*>(row)[g / 8];
  const int group = static_cast<int>(g % 8);
  const int half = group / 4, quarter = group % 4;
  const uint8_t* ql = b.ql + 64 * half + 32 * (quarter % 2);
  const uint8_t* qh = b.qh + 32 * half;
  const int low_shift = quarter < 2 ? 0 : 4;
  int sub[2] = {0, 0};
  for (int k = 0; k < 8; ++k) {
    const uint32_t v = static_cast<uint32_t>(LoadInt2(ql + 4 * k));
    const uint32_t h = static_cast<uint32_t>(LoadInt2(qh + 4 * k));
    const uint32_t level = ((v >> low_shift) & 0x0F0F0F0Fu) | ((h >> (2 * quarter)) & 0x03030303u)
                                                                  << 4;
    // level - 32 fits a signed byte: subtract 32 from every byte.
    const int centered = static_cast<int>(((level | 0x80808080u) - 0x20202020u) ^ 0x80808080u);
    sub[k / 4] = Dp4a(centered, ActInt(a, k), sub[k / 4]);
  }
  const int sumi = b.scales[2 * group] * sub[0] + b.scales[2 * group + 1] * sub[1];
  return static_cast<float>(sumi) * (HalfToFloat(b.d) * a.d);
}

// --- KV rows ----------------------------------------------------------------

// In place: x ← H x, the orthonormal Hadamard transform of size n (a power
// of two), with the butterflies and final scaling of kv_transform.cc.
KVMESH_HD void Hadamard(float* x, int n) {
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = x[j];
        const float b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  const float scale = 1.0f / sqrtf(static_cast<float>(n));
  for (int i = 0; i < n; ++i) x[i] *= scale;
}

KVMESH_HD void EncodeQ8_0Block(const float* x, BlockQ8_0* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const float a = fabsf(x[j]);
    amax = amax < a ? a : amax;
  }
  const float d = amax / 127.0f;
  const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
  out->d = FloatToHalf(d);
  for (int j = 0; j < 32; ++j) out->qs[j] = static_cast<int8_t>(roundf(x[j] * inv_d));
}

// ggml's q4_0 rounding: the block's largest-magnitude value maps to -8.
KVMESH_HD void EncodeQ4_0ReferenceBlock(const float* x, BlockQ4_0* out) {
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (fabsf(x[j]) > amax) {
      amax = fabsf(x[j]);
      max = x[j];
    }
  }
  const float d = max / -8.0f;
  const float inv_d = d != 0.0f ? 1.0f / d : 0.0f;
  out->d = FloatToHalf(d);
  for (int j = 0; j < 16; ++j) {
    int lo = static_cast<int>(x[j] * inv_d + 8.5f);
    int hi = static_cast<int>(x[j + 16] * inv_d + 8.5f);
    lo = lo < 15 ? lo : 15;
    hi = hi < 15 ? hi : 15;
    out->qs[j] = static_cast<uint8_t>(lo | (hi << 4));
  }
}

// The least-squared-error q4_0 rounding of kv_quantizer.cc, step for step.
KVMESH_HD int Q4Level(float x, float inv) {
  float v = x * inv + 8.5f;
  v = v < 0.0f ? 0.0f : v;
  v = 15.5f < v ? 15.5f : v;
  return static_cast<int>(v);
}

KVMESH_HD float Q4EncodeWithScale(const float* x, float d, uint8_t* levels, uint16_t* stored_d) {
  *stored_d = FloatToHalf(d);
  const float dh = HalfToFloat(*stored_d);
  const float inv = dh != 0.0f ? 1.0f / dh : 0.0f;
  float error = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const int level = Q4Level(x[j], inv);
    levels[j] = static_cast<uint8_t>(level);
    const float r = x[j] - dh * static_cast<float>(level - 8);
    error += r * r;
  }
  return error;
}

KVMESH_HD float Q4FitScale(const float* x, float inv, float* scale) {
  float xl[8] = {}, ll[8] = {};
  for (int j = 0; j < 32; j += 8) {
    for (int i = 0; i < 8; ++i) {
      const float l = static_cast<float>(Q4Level(x[j + i], inv) - 8);
      xl[i] += x[j + i] * l;
      ll[i] += l * l;
    }
  }
  float sum_xl = 0.0f, sum_ll = 0.0f;
  for (int i = 0; i < 8; ++i) {
    sum_xl += xl[i];
    sum_ll += ll[i];
  }
  if (sum_ll <= 0.0f) return -1.0f;
  *scale = sum_xl / sum_ll;
  return sum_xl * sum_xl / sum_ll;
}

KVMESH_HD void EncodeQ4_0MinErrorBlock(const float* x, BlockQ4_0* out) {
  float amax = 0.0f, extreme = 0.0f;
  for (int j = 0; j < 32; ++j) {
    if (fabsf(x[j]) > amax) {
      amax = fabsf(x[j]);
      extreme = x[j];
    }
  }
  uint8_t best[32];
  uint16_t best_d = 0;
  float best_error = Q4EncodeWithScale(x, extreme / -8.0f, best, &best_d);
  if (amax > 0.0f) {
    float best_fit = -1.0f, best_scale = 0.0f;
    for (int c = 0; c < 17; ++c) {
      // The candidates of kv_quantizer.cc, in its order.
      const float s = c < 13 ? -8.0f + 0.25f * static_cast<float>(c - 4)
                             : 7.0f + 0.5f * static_cast<float>(c - 14);
      float scale = 0.0f;
      const float fit = Q4FitScale(x, s / extreme, &scale);
      if (fit > best_fit) {
        best_fit = fit;
        best_scale = scale;
      }
    }
    uint8_t trial[32];
    uint16_t trial_d = 0;
    const float error = Q4EncodeWithScale(x, best_scale, trial, &trial_d);
    if (error < best_error) {
      best_d = trial_d;
      for (int j = 0; j < 32; ++j) best[j] = trial[j];
    }
  }
  out->d = best_d;
  for (int j = 0; j < 16; ++j) out->qs[j] = static_cast<uint8_t>(best[j] | (best[j + 16] << 4));
}

// The q3_nl encoder of types/q3_nl.cc, step for step.
KVMESH_HD int Q3NearestCode(float v) {
  const float midpoints[7] = {-103.0f, -62.0f, -29.5f, 0.0f, 29.5f, 62.0f, 103.0f};
  int code = 0;
  for (int k = 0; k < 7; ++k) code += v > midpoints[k] ? 1 : 0;
  return code;
}

KVMESH_HD float Q3EncodeWithScale(const float* x, float d, uint8_t* codes, uint16_t* stored_d) {
  *stored_d = FloatToHalf(d);
  const float dh = HalfToFloat(*stored_d);
  const float inv = dh != 0.0f ? 1.0f / dh : 0.0f;
  float error = 0.0f;
  for (int j = 0; j < 32; ++j) {
    const int code = Q3NearestCode(x[j] * inv);
    codes[j] = static_cast<uint8_t>(code);
    const float r = x[j] - dh * static_cast<float>(Q3NlLevel(code));
    error += r * r;
  }
  return error;
}

KVMESH_HD float Q3FitScale(const float* x, float inv, float* scale) {
  float xl[8] = {}, ll[8] = {};
  for (int j = 0; j < 32; j += 8) {
    for (int i = 0; i < 8; ++i) {
      const float l = static_cast<float>(Q3NlLevel(Q3NearestCode(x[j + i] * inv)));
      xl[i] += x[j + i] * l;
      ll[i] += l * l;
    }
  }
  float sum_xl = 0.0f, sum_ll = 0.0f;
  for (int i = 0; i < 8; ++i) {
    sum_xl += xl[i];
    sum_ll += ll[i];
  }
  *scale = sum_xl / sum_ll;
  return sum_xl * sum_xl / sum_ll;
}

KVMESH_HD void EncodeQ3_NLBlock(const float* x, BlockQ3_NL* out) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
  uint8_t best[32];
  uint16_t best_d = 0;
  float best_error = Q3EncodeWithScale(x, amax / 127.0f, best, &best_d);
  if (amax > 0.0f) {
    float best_fit = -1.0f, best_scale = 0.0f;
    for (int k = 0; k <= 10; ++k) {
      float scale = 0.0f;
      const float fit = Q3FitScale(x, (60.0f + 8.0f * static_cast<float>(k)) / amax, &scale);
      if (fit > best_fit) {
        best_fit = fit;
        best_scale = scale;
      }
    }
    if (best_scale != 0.0f) {
      float scale = 0.0f;
      if (Q3FitScale(x, 1.0f / best_scale, &scale) > best_fit) best_scale = scale;
    }
    uint8_t trial[32];
    uint16_t trial_d = 0;
    const float error = Q3EncodeWithScale(x, best_scale, trial, &trial_d);
    if (error < best_error) {
      best_d = trial_d;
      for (int j = 0; j < 32; ++j) best[j] = trial[j];
    }
  }
  out->d = best_d;
  for (int j = 0; j < 8; ++j) out->ql[j] = 0;
  for (int j = 0; j < 4; ++j) out->qh[j] = 0;
  for (int j = 0; j < 32; ++j) {
    out->ql[j % 8] = static_cast<uint8_t>(out->ql[j % 8] | ((best[j] & 3) << (2 * (j / 8))));
    out->qh[j / 8] = static_cast<uint8_t>(out->qh[j / 8] | ((best[j] >> 2) << (j % 8)));
  }
}

// One row of n values (after its transforms) into a page row of `type`.
// `min_error` selects q4_0's rounding (KvRounding::kMinError).
KVMESH_HD void EncodeKvRow(TensorType type, bool min_error, const float* x, uint8_t* dst, int n) {
  switch (type) {
    case TensorType::kF32:
      for (int i = 0; i < n; ++i) reinterpret_cast<float*>(dst)[i] = x[i];
      return;
    case TensorType::kF16:
      for (int i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(dst)[i] = FloatToHalf(x[i]);
      return;
    case TensorType::kBF16:
      for (int i = 0; i < n; ++i) reinterpret_cast<uint16_t*>(dst)[i] = FloatToBf16(x[i]);
      return;
    case TensorType::kQ8_0:
      for (int b = 0; b < n / 32; ++b) {
        EncodeQ8_0Block(x + 32 * b, reinterpret_cast<BlockQ8_0*>(dst) + b);
      }
      return;
    case TensorType::kQ4_0:
      for (int b = 0; b < n / 32; ++b) {
        BlockQ4_0* out = reinterpret_cast<BlockQ4_0*>(dst) + b;
        if (min_error) {
          EncodeQ4_0MinErrorBlock(x + 32 * b, out);
        } else {
          EncodeQ4_0ReferenceBlock(x + 32 * b, out);
        }
      }
      return;
    case TensorType::kQ3_NL:
      for (int b = 0; b < n / 32; ++b) {
        EncodeQ3_NLBlock(x + 32 * b, reinterpret_cast<BlockQ3_NL*>(dst) + b);
      }
      return;
    default:
      return;
  }
}

// Element i of a page row of `type` (a KV storage type).
KVMESH_HD float KvElement(TensorType type, const uint8_t* row, int i) {
  switch (type) {
    case TensorType::kF32:
      return RowElement<TensorType::kF32>(row, i);
    case TensorType::kF16:
      return RowElement<TensorType::kF16>(row, i);
    case TensorType::kBF16:
      return RowElement<TensorType::kBF16>(row, i);
    case TensorType::kQ8_0:
      return RowElement<TensorType::kQ8_0>(row, i);
    case TensorType::kQ4_0:
      return RowElement<TensorType::kQ4_0>(row, i);
    case TensorType::kQ3_NL:
      return RowElement<TensorType::kQ3_NL>(row, i);
    default:
      return 0.0f;
  }
}

}  // namespace kvmesh::cuda
