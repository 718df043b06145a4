// The planar layout of converted activations (panel_layout.h): each token's
// row of the weight's vec_dot_type, laid out for broadcast loads.
#include <cstring>

#include "common/check.h"
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/panel_layout.h"

namespace kvmesh::kernels {
namespace {

using T = TensorType;

size_t RoundUp64(size_t n) { return (n + 63) / 64 * 64; }

int64_t PaddedPairs(int64_t cols) { return (cols + 1) / 2; }

}  // namespace

PlanarLayout GetPlanarLayout(TensorType vec_dot_type, int64_t cols) {
  PlanarLayout l;
  l.type = vec_dot_type;
  l.cols = cols;
  size_t end = 0;
  switch (vec_dot_type) {
    case T::kF32:
    case T::kF16:
      end = 4 * static_cast<size_t>(cols);
      break;
    case T::kBF16:
      end = 4 * static_cast<size_t>(PaddedPairs(cols));
      break;
    case T::kQ8_0:
    case T::kQ8_1: {
      const size_t blocks = static_cast<size_t>(cols / kLegacyBlockSize);
      l.scales = RoundUp64(static_cast<size_t>(cols));
      l.aux = RoundUp64(l.scales + 4 * blocks);
      l.aux_stride = RoundUp64(4 * blocks);
      end = l.aux + (vec_dot_type == T::kQ8_0 ? 3 : 1) * l.aux_stride;
      break;
    }
    case T::kQ8_K: {
      const size_t super_blocks = static_cast<size_t>(cols / kSuperBlockSize);
      l.scales = RoundUp64(static_cast<size_t>(cols));
      l.aux = RoundUp64(l.scales + 4 * super_blocks);
      l.aux2 = RoundUp64(l.aux + 2 * static_cast<size_t>(cols / 32));
      l.aux3 = RoundUp64(l.aux2 + 4 * static_cast<size_t>(cols / 8));
      end = l.aux3 + 2 * static_cast<size_t>(cols / 16);
      break;
    }
    default:
      KVMESH_CHECK(false);
  }
  l.row_bytes = RoundUp64(end);
  return l;
}

void BlocksToPlanar(const PlanarLayout& l, const void* blocks, uint8_t* planar) {
  const int64_t n = l.cols;
  int8_t* levels = reinterpret_cast<int8_t*>(planar + l.levels);
  float* scales = reinterpret_cast<float*>(planar + l.scales);
  switch (l.type) {
    case T::kF32:
      std::memcpy(planar, blocks, 4 * static_cast<size_t>(n));
      return;
    case T::kF16: {
      const uint16_t* h = static_cast<const uint16_t*>(blocks);
      float* values = reinterpret_cast<float*>(planar);
      for (int64_t k = 0; k < n; ++k) values[k] = HalfToFloat(h[k]);
      return;
    }
    case T::kBF16:
      std::memset(planar, 0, 4 * static_cast<size_t>(PaddedPairs(n)));
      std::memcpy(planar, blocks, 2 * static_cast<size_t>(n));
      return;
    case T::kQ8_0: {
      const BlockQ8_0* b = static_cast<const BlockQ8_0*>(blocks);
      for (int64_t i = 0; i < n / kLegacyBlockSize; ++i) {
        std::memcpy(levels + kLegacyBlockSize * i, b[i].qs, kLegacyBlockSize);
        scales[i] = HalfToFloat(b[i].d);
        int32_t sum = 0;
        for (int j = 0; j < kLegacyBlockSize; ++j) sum += b[i].qs[j];
        const int32_t offsets[] = {8, 16, 128};
        for (int k = 0; k < 3; ++k) {
          reinterpret_cast<int32_t*>(planar + l.aux + k * l.aux_stride)[i] = -offsets[k] * sum;
        }
      }
      return;
    }
    case T::kQ8_1: {
      const BlockQ8_1* b = static_cast<const BlockQ8_1*>(blocks);
      float* s = reinterpret_cast<float*>(planar + l.aux);
      for (int64_t i = 0; i < n / kLegacyBlockSize; ++i) {
        std::memcpy(levels + kLegacyBlockSize * i, b[i].qs, kLegacyBlockSize);
        scales[i] = HalfToFloat(b[i].d);
        s[i] = HalfToFloat(b[i].s);
      }
      return;
    }
    case T::kQ8_K: {
      const BlockQ8_K* b = static_cast<const BlockQ8_K*>(blocks);
      int16_t* bsum32 = reinterpret_cast<int16_t*>(planar + l.aux);
      int32_t* neg32_sum8 = reinterpret_cast<int32_t*>(planar + l.aux2);
      int16_t* bsum16 = reinterpret_cast<int16_t*>(planar + l.aux3);
      for (int64_t i = 0; i < n / kSuperBlockSize; ++i) {
        std::memcpy(levels + kSuperBlockSize * i, b[i].qs, kSuperBlockSize);
        scales[i] = b[i].d;
        std::memcpy(bsum16 + 16 * i, b[i].bsums, sizeof b[i].bsums);
        for (int j = 0; j < 8; ++j) {
          bsum32[8 * i + j] = static_cast<int16_t>(b[i].bsums[2 * j] + b[i].bsums[2 * j + 1]);
        }
        for (int e = 0; e < 32; ++e) {
          int32_t sum = 0;
          for (int k = 0; k < 8; ++k) sum += b[i].qs[8 * e + k];
          neg32_sum8[32 * i + e] = -32 * sum;
        }
      }
      return;
    }
    default:
      KVMESH_CHECK(false);
  }
}

void PlanarToBlocks(const PlanarLayout& l, const uint8_t* planar, void* blocks) {
  const int64_t n = l.cols;
  const int8_t* levels = reinterpret_cast<const int8_t*>(planar + l.levels);
  const float* scales = reinterpret_cast<const float*>(planar + l.scales);
  switch (l.type) {
    case T::kF32:
      std::memcpy(blocks, planar, 4 * static_cast<size_t>(n));
      return;
    case T::kF16: {
      uint16_t* h = static_cast<uint16_t*>(blocks);
      const float* values = reinterpret_cast<const float*>(planar);
      for (int64_t k = 0; k < n; ++k) h[k] = FloatToHalf(values[k]);
      return;
    }
    case T::kBF16:
      std::memcpy(blocks, planar, 2 * static_cast<size_t>(n));
      return;
    case T::kQ8_0: {
      BlockQ8_0* b = static_cast<BlockQ8_0*>(blocks);
      for (int64_t i = 0; i < n / kLegacyBlockSize; ++i) {
        std::memcpy(b[i].qs, levels + kLegacyBlockSize * i, kLegacyBlockSize);
        b[i].d = FloatToHalf(scales[i]);
      }
      return;
    }
    case T::kQ8_1: {
      BlockQ8_1* b = static_cast<BlockQ8_1*>(blocks);
      const float* s = reinterpret_cast<const float*>(planar + l.aux);
      for (int64_t i = 0; i < n / kLegacyBlockSize; ++i) {
        std::memcpy(b[i].qs, levels + kLegacyBlockSize * i, kLegacyBlockSize);
        b[i].d = FloatToHalf(scales[i]);
        b[i].s = FloatToHalf(s[i]);
      }
      return;
    }
    case T::kQ8_K: {
      BlockQ8_K* b = static_cast<BlockQ8_K*>(blocks);
      for (int64_t i = 0; i < n / kSuperBlockSize; ++i) {
        std::memcpy(b[i].qs, levels + kSuperBlockSize * i, kSuperBlockSize);
        b[i].d = scales[i];
        for (int g = 0; g < kSuperBlockSize / 16; ++g) {
          int sum = 0;
          for (int k = 0; k < 16; ++k) sum += b[i].qs[16 * g + k];
          b[i].bsums[g] = static_cast<int16_t>(sum);
        }
      }
      return;
    }
    default:
      KVMESH_CHECK(false);
  }
}

}  // namespace kvmesh::kernels
