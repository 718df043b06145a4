// Q3_NL: KV pages only. 32 values as 3-bit indices into kQ3NlLevels (a
// Lloyd-Max codebook in integer units) with one f16 scale, 14 bytes per block
// (3.5 bits per value); block_types.h has the bit layout.
//
// The quantizer is the only rounding this type has, and it is the one that
// minimises the block's squared error among its candidates: the largest
// magnitude is put at several points of the code range, each choice's codes
// are fitted with the least-squares scale, the best fit is refined once, and
// the result is kept only if it beats the plain "largest magnitude -> 127"
// scale as stored (with the f16-rounded scale). The CUDA encoder
// (worker/kernels/cuda/block_math.h) repeats these steps operation for
// operation, so pages are the same bytes on either device.
#include <cmath>
#include <cstring>

#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/reference_kernels.h"

namespace kvmesh::kernels {
namespace {

constexpr int kBlock = kLegacyBlockSize;

// Midpoints between neighbouring levels: the code of v (in level units) is
// the number of midpoints below it, i.e. the index of the nearest level.
constexpr float kMidpoints[7] = {-103.0f, -62.0f, -29.5f, 0.0f, 29.5f, 62.0f, 103.0f};

inline int NearestCode(float v) {
  int code = 0;
  for (float m : kMidpoints) code += v > m ? 1 : 0;
  return code;
}

inline int CodeAt(const BlockQ3_NL& b, int j) {
  const int low = (b.ql[j % 8] >> (2 * (j / 8))) & 3;
  const int high = (b.qh[j / 8] >> (j % 8)) & 1;
  return low | (high << 2);
}

// Codes for the stored (f16-rounded) scale `d`, and the block's squared
// error with them.
float EncodeWithScale(const float* x, float d, uint8_t* codes, uint16_t* stored_d) {
  *stored_d = FloatToHalf(d);
  const float dh = HalfToFloat(*stored_d);
  const float inv = dh != 0.0f ? 1.0f / dh : 0.0f;
  float error = 0.0f;
  for (int j = 0; j < kBlock; ++j) {
    const int code = NearestCode(x[j] * inv);
    codes[j] = static_cast<uint8_t>(code);
    const float r = x[j] - dh * static_cast<float>(kQ3NlLevels[code]);
    error += r * r;
  }
  return error;
}

// For the codes x·inv rounds to, the least-squares scale is Σxl / Σl² and the
// error it leaves is Σx² - (Σxl)² / Σl²; returns (Σxl)² / Σl² (larger is
// better) and the scale.
float FitScale(const float* x, float inv, float* scale) {
  constexpr int kLanes = 8;
  float xl[kLanes] = {}, ll[kLanes] = {};
  for (int j = 0; j < kBlock; j += kLanes) {
    for (int i = 0; i < kLanes; ++i) {
      const float l = static_cast<float>(kQ3NlLevels[NearestCode(x[j + i] * inv)]);
      xl[i] += x[j + i] * l;
      ll[i] += l * l;
    }
  }
  float sum_xl = 0.0f, sum_ll = 0.0f;
  for (int i = 0; i < kLanes; ++i) {
    sum_xl += xl[i];
    sum_ll += ll[i];
  }
  *scale = sum_xl / sum_ll;  // sum_ll >= 32 * 14², never 0
  return sum_xl * sum_xl / sum_ll;
}

void QuantizeBlock(const float* x, BlockQ3_NL* out) {
  float amax = 0.0f;
  for (int j = 0; j < kBlock; ++j) amax = std::fabs(x[j]) > amax ? std::fabs(x[j]) : amax;
  uint8_t best[kBlock];
  uint16_t best_d = 0;
  float best_error = EncodeWithScale(x, amax / 127.0f, best, &best_d);
  if (amax > 0.0f) {
    float best_fit = -1.0f, best_scale = 0.0f;
    for (int k = 0; k <= 10; ++k) {
      float scale = 0.0f;
      const float fit = FitScale(x, (60.0f + 8.0f * static_cast<float>(k)) / amax, &scale);
      if (fit > best_fit) {
        best_fit = fit;
        best_scale = scale;
      }
    }
    if (best_scale != 0.0f) {
      float scale = 0.0f;
      if (FitScale(x, 1.0f / best_scale, &scale) > best_fit) best_scale = scale;
    }
    uint8_t trial[kBlock];
    uint16_t trial_d = 0;
    const float error = EncodeWithScale(x, best_scale, trial, &trial_d);
    if (error < best_error) {
      best_d = trial_d;
      std::memcpy(best, trial, kBlock);
    }
  }
  out->d = best_d;
  std::memset(out->ql, 0, sizeof(out->ql));
  std::memset(out->qh, 0, sizeof(out->qh));
  for (int j = 0; j < kBlock; ++j) {
    out->ql[j % 8] = static_cast<uint8_t>(out->ql[j % 8] | ((best[j] & 3) << (2 * (j / 8))));
    out->qh[j / 8] = static_cast<uint8_t>(out->qh[j / 8] | ((best[j] >> 2) << (j % 8)));
  }
}

}  // namespace

void DequantizeRowQ3_NL(const void* src, float* dst, int64_t n) {
  const BlockQ3_NL* blocks = static_cast<const BlockQ3_NL*>(src);
  const int64_t num_blocks = NumBlocks(n, kBlock);
  for (int64_t b = 0; b < num_blocks; ++b) {
    const float d = HalfToFloat(blocks[b].d);
    for (int j = 0; j < kBlock; ++j) {
      dst[b * kBlock + j] = static_cast<float>(kQ3NlLevels[CodeAt(blocks[b], j)]) * d;
    }
  }
}

void QuantizeRowQ3_NL(const float* src, void* dst, int64_t n) {
  BlockQ3_NL* blocks = static_cast<BlockQ3_NL*>(dst);
  const int64_t num_blocks = NumBlocks(n, kBlock);
  for (int64_t b = 0; b < num_blocks; ++b) QuantizeBlock(src + b * kBlock, &blocks[b]);
}

float VecDotQ3_NLQ8_0(int64_t n, const void* w, const void* x) {
  const BlockQ3_NL* wb = static_cast<const BlockQ3_NL*>(w);
  const BlockQ8_0* xb = static_cast<const BlockQ8_0*>(x);
  const int64_t num_blocks = NumBlocks(n, kBlock);
  float sum = 0.0f;
  for (int64_t b = 0; b < num_blocks; ++b) {
    int32_t sumi = 0;
    for (int j = 0; j < kBlock; ++j) sumi += kQ3NlLevels[CodeAt(wb[b], j)] * xb[b].qs[j];
    sum += static_cast<float>(sumi) * (HalfToFloat(wb[b].d) * HalfToFloat(xb[b].d));
  }
  return sum;
}

constinit const TypeRecord<TensorType::kQ3_NL> kQ3_NLScalar = {
    .vec_dot_type = TensorType::kQ8_0,
    .block_size = kLegacyBlockSize,
    .bytes_per_block = sizeof(BlockQ3_NL),
    .to_float = DequantizeRowQ3_NL,
    .from_float = QuantizeRowQ3_NL,
    .vec_dot = VecDotQ3_NLQ8_0,
};

}  // namespace kvmesh::kernels
