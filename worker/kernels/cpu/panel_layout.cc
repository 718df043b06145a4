#include "worker/kernels/cpu/panel_layout.h"

#include <cstring>
#include <vector>

#include "common/check.h"
#include "common/half.h"
#include "worker/kernels/cpu/block_types.h"
#include "worker/kernels/cpu/iq_grids.h"

namespace kvmesh::kernels {
namespace {

using T = TensorType;

constexpr int kVector = 64;  // bytes of a group vector
constexpr int kMask = 8;     // bytes of a mask

int64_t PaddedPairs(int64_t cols) { return (cols + 1) / 2; }

// --- Per-type packing of one block of one row -----------------------------
//
// Each Pack* writes row r's share of a panel-block at `out` (the start of the
// panel-block), and each Unpack* reads it back. `out` / `in` always points at
// 16 * bytes_per_block bytes.

void PackHalves(uint16_t value, int r, uint8_t* array) { std::memcpy(array + 2 * r, &value, 2); }
uint16_t UnpackHalves(const uint8_t* array, int r) {
  uint16_t v;
  std::memcpy(&v, array + 2 * r, 2);
  return v;
}

// Four bytes of row r in group vector `v`.
uint8_t* Lane(uint8_t* vectors, int v, int r) { return vectors + kVector * v + 4 * r; }
const uint8_t* Lane(const uint8_t* vectors, int v, int r) { return vectors + kVector * v + 4 * r; }

// Sets bits 4r..4r+3 of mask m to the low four bits of `nibble`.
void SetMaskNibble(uint8_t* masks, int m, int r, uint32_t nibble) {
  uint64_t mask;
  std::memcpy(&mask, masks + kMask * m, kMask);
  mask = (mask & ~(uint64_t{0xF} << (4 * r))) | (uint64_t{nibble & 0xF} << (4 * r));
  std::memcpy(masks + kMask * m, &mask, kMask);
}
uint32_t GetMaskNibble(const uint8_t* masks, int m, int r) {
  uint64_t mask;
  std::memcpy(&mask, masks + kMask * m, kMask);
  return static_cast<uint32_t>(mask >> (4 * r)) & 0xF;
}

uint32_t LoadU32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
void StoreU32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

// Legacy 32-element types. The nibble vectors hold the original qs bytes.
template <typename Block, bool kHasMin, bool kHasHigh>
void PackLegacy(const Block& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  uint8_t* p = out + 32;
  if constexpr (kHasMin) {
    PackHalves(b.m, r, p);
    p += 32;
  }
  if constexpr (kHasHigh) {
    const uint32_t high = LoadU32(b.qh);
    for (int g = 0; g < 8; ++g) SetMaskNibble(p, g, r, high >> (4 * g));
    p += 8 * kMask;
  }
  for (int c = 0; c < 4; ++c) std::memcpy(Lane(p, c, r), b.qs + 4 * c, 4);
}

template <typename Block, bool kHasMin, bool kHasHigh>
void UnpackLegacy(const uint8_t* in, int r, Block* b) {
  b->d = UnpackHalves(in, r);
  const uint8_t* p = in + 32;
  if constexpr (kHasMin) {
    b->m = UnpackHalves(p, r);
    p += 32;
  }
  if constexpr (kHasHigh) {
    uint32_t high = 0;
    for (int g = 0; g < 8; ++g) high |= GetMaskNibble(p, g, r) << (4 * g);
    StoreU32(b->qh, high);
    p += 8 * kMask;
  }
  for (int c = 0; c < 4; ++c) std::memcpy(b->qs + 4 * c, Lane(p, c, r), 4);
}

void PackQ8_0(const BlockQ8_0& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  for (int g = 0; g < 8; ++g) {
    uint8_t* lane = Lane(out + 32, g, r);
    for (int i = 0; i < 4; ++i) lane[i] = static_cast<uint8_t>(b.qs[4 * g + i]) ^ 0x80;
  }
}
void UnpackQ8_0(const uint8_t* in, int r, BlockQ8_0* b) {
  b->d = UnpackHalves(in, r);
  for (int g = 0; g < 8; ++g) {
    const uint8_t* lane = Lane(in + 32, g, r);
    for (int i = 0; i < 4; ++i) b->qs[4 * g + i] = static_cast<int8_t>(lane[i] ^ 0x80);
  }
}

// The `bytes` bytes at src as consecutive 4-byte lanes of row r: bytes
// 4v..4v+3 go to vector v.
void PackLanes(const uint8_t* src, int bytes, int r, uint8_t* vectors) {
  for (int v = 0; v < bytes / 4; ++v) std::memcpy(Lane(vectors, v, r), src + 4 * v, 4);
}
void UnpackLanes(const uint8_t* vectors, int bytes, int r, uint8_t* dst) {
  for (int v = 0; v < bytes / 4; ++v) std::memcpy(dst + 4 * v, Lane(vectors, v, r), 4);
}

// Q2_K, Q3_K and IQ4_XS keep their GGUF bytes, each array as lanes
// (panel_layout.h); only the 2-byte fields (f16 scales, IQ4_XS's scales_h)
// gather into arrays of 16.
constexpr int kQ2KScales = 64;
constexpr int kQ2KQs = 320;
constexpr int kQ3KScales = 32;
constexpr int kQ3KQs = 224;
constexpr int kQ3KHmask = 1248;
constexpr int kIq4XsScalesH = 32;
constexpr int kIq4XsScalesL = 64;
constexpr int kIq4XsQs = 128;

void PackQ2_K(const BlockQ2_K& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  PackHalves(b.dmin, r, out + 32);
  PackLanes(b.scales, sizeof b.scales, r, out + kQ2KScales);
  PackLanes(b.qs, sizeof b.qs, r, out + kQ2KQs);
}
void UnpackQ2_K(const uint8_t* in, int r, BlockQ2_K* b) {
  b->d = UnpackHalves(in, r);
  b->dmin = UnpackHalves(in + 32, r);
  UnpackLanes(in + kQ2KScales, sizeof b->scales, r, b->scales);
  UnpackLanes(in + kQ2KQs, sizeof b->qs, r, b->qs);
}

void PackQ3_K(const BlockQ3_K& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  PackLanes(b.scales, sizeof b.scales, r, out + kQ3KScales);
  PackLanes(b.qs, sizeof b.qs, r, out + kQ3KQs);
  PackLanes(b.hmask, sizeof b.hmask, r, out + kQ3KHmask);
}
void UnpackQ3_K(const uint8_t* in, int r, BlockQ3_K* b) {
  b->d = UnpackHalves(in, r);
  UnpackLanes(in + kQ3KScales, sizeof b->scales, r, b->scales);
  UnpackLanes(in + kQ3KQs, sizeof b->qs, r, b->qs);
  UnpackLanes(in + kQ3KHmask, sizeof b->hmask, r, b->hmask);
}

void PackIQ4_XS(const BlockIQ4_XS& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  PackHalves(b.scales_h, r, out + kIq4XsScalesH);
  PackLanes(b.scales_l, sizeof b.scales_l, r, out + kIq4XsScalesL);
  PackLanes(b.qs, sizeof b.qs, r, out + kIq4XsQs);
}
void UnpackIQ4_XS(const uint8_t* in, int r, BlockIQ4_XS* b) {
  b->d = UnpackHalves(in, r);
  b->scales_h = UnpackHalves(in + kIq4XsScalesH, r);
  UnpackLanes(in + kIq4XsScalesL, sizeof b->scales_l, r, b->scales_l);
  UnpackLanes(in + kIq4XsQs, sizeof b->qs, r, b->qs);
}

// IQ3_XXS and IQ2_XS keep their GGUF bytes as lanes too, after d[16].
constexpr int kIq3sScales = 32;
constexpr int kIq3sNibbles = 96;
constexpr size_t kIq3sPanelBytes = (kIq3sNibbles + 32 * 64) / kPanelRows;  // 134
constexpr int kIq3xxsQs = 32;
constexpr int kIq2xsQs = 32;
constexpr int kIq2xsScales = 32 + 16 * 64;

// IQ3_S is expanded: each value as a nibble, its level (0..7, the value
// 2 * level + 1) with its sign as bit 3, so the kernels look values up with a
// byte shuffle instead of gathering codebook points (panel_layout.h).
void PackIQ3_S(const BlockIQ3_S& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  PackLanes(b.scales, sizeof b.scales, r, out + kIq3sScales);
  auto nibble = [&](int e) {
    const int group = e / 4;
    const int point = b.qs[group] | ((b.qh[group / 8] >> (group % 8)) & 1) << 8;
    const int level = (kIq3sGridLevels[point] >> (3 * (e % 4))) & 7;
    const int sign = (b.signs[e / 8] >> (e % 8)) & 1;
    return level | sign << 3;
  };
  for (int j = 0; j < 8; ++j) {
    for (int c = 0; c < 4; ++c) {
      uint8_t* lane = Lane(out + kIq3sNibbles, 4 * j + c, r);
      for (int k = 0; k < 4; ++k) {
        const int low = 32 * j + 4 * c + k;
        lane[k] = static_cast<uint8_t>(nibble(low) | nibble(low + 16) << 4);
      }
    }
  }
}
void UnpackIQ3_S(const uint8_t* in, int r, BlockIQ3_S* b) {
  *b = {};
  b->d = UnpackHalves(in, r);
  UnpackLanes(in + kIq3sScales, sizeof b->scales, r, b->scales);
  for (int g = 0; g < 64; ++g) {
    const int j = g / 8;
    const int c = g % 8 % 4;
    const int shift = g % 8 < 4 ? 0 : 4;
    const uint8_t* lane = Lane(in + kIq3sNibbles, 4 * j + c, r);
    int levels = 0;
    for (int k = 0; k < 4; ++k) {
      const int n = (lane[k] >> shift) & 0x0F;
      levels |= (n & 7) << (3 * k);
      const int e = 4 * g + k;
      if (n & 8) b->signs[e / 8] |= static_cast<uint8_t>(1 << (e % 8));
    }
    const int point = kIq3sPointOfLevels[static_cast<size_t>(levels)];
    KVMESH_CHECK(point >= 0);
    b->qs[g] = static_cast<uint8_t>(point & 0xFF);
    b->qh[g / 8] |= static_cast<uint8_t>((point >> 8) << (g % 8));
  }
}

void PackIQ3_XXS(const BlockIQ3_XXS& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  PackLanes(b.qs, sizeof b.qs, r, out + kIq3xxsQs);
}
void UnpackIQ3_XXS(const uint8_t* in, int r, BlockIQ3_XXS* b) {
  b->d = UnpackHalves(in, r);
  UnpackLanes(in + kIq3xxsQs, sizeof b->qs, r, b->qs);
}

void PackIQ2_XS(const BlockIQ2_XS& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  PackLanes(reinterpret_cast<const uint8_t*>(b.qs), sizeof b.qs, r, out + kIq2xsQs);
  PackLanes(b.scales, sizeof b.scales, r, out + kIq2xsScales);
}
void UnpackIQ2_XS(const uint8_t* in, int r, BlockIQ2_XS* b) {
  b->d = UnpackHalves(in, r);
  UnpackLanes(in + kIq2xsQs, sizeof b->qs, r, reinterpret_cast<uint8_t*>(b->qs));
  UnpackLanes(in + kIq2xsScales, sizeof b->scales, r, b->scales);
}

// Q4_K / Q5_K share d, dmin, scales and the nibble vectors.
constexpr int kKScales = 64;  // offset of the scale words
constexpr int kKMasks = 256;  // offset of Q5_K's masks
constexpr int kQ4KQs = 256;   // offset of Q4_K's nibbles
constexpr int kQ5KQs = 768;   // offset of Q5_K's nibbles

template <typename Block>
void PackAffineK(const Block& b, int r, uint8_t* out, int qs_offset) {
  PackHalves(b.d, r, out);
  PackHalves(b.dmin, r, out + 32);
  for (int w = 0; w < 3; ++w) std::memcpy(Lane(out + kKScales, w, r), b.scales + 4 * w, 4);
  for (int v = 0; v < 32; ++v) {
    const int c = v / 8, g = v % 8;
    std::memcpy(Lane(out + qs_offset, v, r), b.qs + 32 * c + 4 * g, 4);
  }
}
template <typename Block>
void UnpackAffineK(const uint8_t* in, int r, Block* b, int qs_offset) {
  b->d = UnpackHalves(in, r);
  b->dmin = UnpackHalves(in + 32, r);
  for (int w = 0; w < 3; ++w) std::memcpy(b->scales + 4 * w, Lane(in + kKScales, w, r), 4);
  for (int v = 0; v < 32; ++v) {
    const int c = v / 8, g = v % 8;
    std::memcpy(b->qs + 32 * c + 4 * g, Lane(in + qs_offset, v, r), 4);
  }
}

void PackQ5_K(const BlockQ5_K& b, int r, uint8_t* out) {
  PackAffineK(b, r, out, kQ5KQs);
  for (int j = 0; j < 8; ++j) {
    for (int g = 0; g < 8; ++g) {
      uint32_t nibble = 0;
      for (int i = 0; i < 4; ++i) nibble |= static_cast<uint32_t>((b.qh[4 * g + i] >> j) & 1) << i;
      SetMaskNibble(out + kKMasks, 8 * j + g, r, nibble);
    }
  }
}
void UnpackQ5_K(const uint8_t* in, int r, BlockQ5_K* b) {
  UnpackAffineK(in, r, b, kQ5KQs);
  std::memset(b->qh, 0, sizeof b->qh);
  for (int j = 0; j < 8; ++j) {
    for (int g = 0; g < 8; ++g) {
      const uint32_t nibble = GetMaskNibble(in + kKMasks, 8 * j + g, r);
      for (int i = 0; i < 4; ++i)
        b->qh[4 * g + i] |= static_cast<uint8_t>(((nibble >> i) & 1) << j);
    }
  }
}

// Q6_K: levels are rebuilt element by element through the GGUF bit layout
// (see block_types.h).
constexpr int kQ6Scales = 32;
constexpr int kQ6Low = 288;
constexpr int kQ6High = 288 + 32 * kVector;

int Q6Level(const BlockQ6_K& b, int e) {
  const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
  const uint8_t low_byte = b.ql[64 * half + 32 * (quarter % 2) + l];
  const int low = quarter < 2 ? low_byte & 0x0F : low_byte >> 4;
  return low | ((b.qh[32 * half + l] >> (2 * quarter)) & 3) << 4;
}
void SetQ6Level(BlockQ6_K* b, int e, int level) {
  const int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
  uint8_t& low_byte = b->ql[64 * half + 32 * (quarter % 2) + l];
  if (quarter < 2) {
    low_byte = static_cast<uint8_t>((low_byte & 0xF0) | (level & 0x0F));
  } else {
    low_byte = static_cast<uint8_t>((low_byte & 0x0F) | (level & 0x0F) << 4);
  }
  uint8_t& high_byte = b->qh[32 * half + l];
  high_byte = static_cast<uint8_t>((high_byte & ~(3 << (2 * quarter))) | ((level >> 4) & 3)
                                                                             << (2 * quarter));
}

void PackQ6_K(const BlockQ6_K& b, int r, uint8_t* out) {
  PackHalves(b.d, r, out);
  for (int j = 0; j < 16; ++j) out[kQ6Scales + 16 * j + r] = static_cast<uint8_t>(b.scales[j]);
  for (int k = 0; k < 32; ++k) {
    uint8_t* lane = Lane(out + kQ6Low, k, r);
    for (int i = 0; i < 4; ++i) {
      lane[i] = static_cast<uint8_t>((Q6Level(b, 4 * k + i) & 0x0F) |
                                     (Q6Level(b, 4 * (k + 32) + i) & 0x0F) << 4);
    }
  }
  for (int m = 0; m < 16; ++m) {
    uint8_t* lane = Lane(out + kQ6High, m, r);
    for (int i = 0; i < 4; ++i) {
      int bits = 0;
      for (int s = 0; s < 4; ++s) bits |= (Q6Level(b, 4 * (m + 16 * s) + i) >> 4) << (2 * s);
      lane[i] = static_cast<uint8_t>(bits);
    }
  }
}
void UnpackQ6_K(const uint8_t* in, int r, BlockQ6_K* b) {
  std::memset(b, 0, sizeof *b);
  b->d = UnpackHalves(in, r);
  for (int j = 0; j < 16; ++j) b->scales[j] = static_cast<int8_t>(in[kQ6Scales + 16 * j + r]);
  for (int e = 0; e < kSuperBlockSize; ++e) {
    const int group = e / 4, i = e % 4;
    const uint8_t low_byte = Lane(in + kQ6Low, group % 32, r)[i];
    const int low = group < 32 ? low_byte & 0x0F : low_byte >> 4;
    const int high = (Lane(in + kQ6High, group % 16, r)[i] >> (2 * (group / 16))) & 3;
    SetQ6Level(b, e, low | high << 4);
  }
}

// Float types: one lane per row, one vector per element (pair for BF16).
void PackFloatRow(T type, const uint8_t* row, int64_t cols, int r, uint8_t* panel) {
  switch (type) {
    case T::kF32:
      for (int64_t k = 0; k < cols; ++k) std::memcpy(panel + 64 * k + 4 * r, row + 4 * k, 4);
      break;
    case T::kF16:
      for (int64_t k = 0; k < cols; ++k) std::memcpy(panel + 32 * k + 2 * r, row + 2 * k, 2);
      break;
    case T::kBF16:
      for (int64_t k = 0; k < cols; ++k) {
        std::memcpy(panel + 64 * (k / 2) + 4 * r + 2 * (k % 2), row + 2 * k, 2);
      }
      break;
    default:
      KVMESH_CHECK(false);
  }
}
void UnpackFloatRow(T type, const uint8_t* panel, int64_t cols, int r, uint8_t* row) {
  switch (type) {
    case T::kF32:
      for (int64_t k = 0; k < cols; ++k) std::memcpy(row + 4 * k, panel + 64 * k + 4 * r, 4);
      break;
    case T::kF16:
      for (int64_t k = 0; k < cols; ++k) std::memcpy(row + 2 * k, panel + 32 * k + 2 * r, 2);
      break;
    case T::kBF16:
      for (int64_t k = 0; k < cols; ++k) {
        std::memcpy(row + 2 * k, panel + 64 * (k / 2) + 4 * r + 2 * (k % 2), 2);
      }
      break;
    default:
      KVMESH_CHECK(false);
  }
}

struct BlockInfo {
  int64_t block_size;
  size_t bytes;        // of a GGUF block
  size_t panel_bytes;  // of one row's share of a panel-block (bytes, or more where expanded)
};

BlockInfo QuantBlockInfo(T type) {
  switch (type) {
    case T::kQ4_0:
      return {kLegacyBlockSize, sizeof(BlockQ4_0), sizeof(BlockQ4_0)};
    case T::kQ4_1:
      return {kLegacyBlockSize, sizeof(BlockQ4_1), sizeof(BlockQ4_1)};
    case T::kQ5_0:
      return {kLegacyBlockSize, sizeof(BlockQ5_0), sizeof(BlockQ5_0)};
    case T::kQ5_1:
      return {kLegacyBlockSize, sizeof(BlockQ5_1), sizeof(BlockQ5_1)};
    case T::kQ8_0:
      return {kLegacyBlockSize, sizeof(BlockQ8_0), sizeof(BlockQ8_0)};
    case T::kQ4_K:
      return {kSuperBlockSize, sizeof(BlockQ4_K), sizeof(BlockQ4_K)};
    case T::kQ5_K:
      return {kSuperBlockSize, sizeof(BlockQ5_K), sizeof(BlockQ5_K)};
    case T::kQ6_K:
      return {kSuperBlockSize, sizeof(BlockQ6_K), sizeof(BlockQ6_K)};
    case T::kQ2_K:
      return {kSuperBlockSize, sizeof(BlockQ2_K), sizeof(BlockQ2_K)};
    case T::kQ3_K:
      return {kSuperBlockSize, sizeof(BlockQ3_K), sizeof(BlockQ3_K)};
    case T::kIQ4_NL:
      return {kLegacyBlockSize, sizeof(BlockIQ4_NL), sizeof(BlockIQ4_NL)};
    case T::kIQ4_XS:
      return {kSuperBlockSize, sizeof(BlockIQ4_XS), sizeof(BlockIQ4_XS)};
    case T::kIQ3_S:
      return {kSuperBlockSize, sizeof(BlockIQ3_S), kIq3sPanelBytes};
    case T::kIQ3_XXS:
      return {kSuperBlockSize, sizeof(BlockIQ3_XXS), sizeof(BlockIQ3_XXS)};
    case T::kIQ2_XS:
      return {kSuperBlockSize, sizeof(BlockIQ2_XS), sizeof(BlockIQ2_XS)};
    default:
      return {0, 0, 0};
  }
}

bool IsFloatType(T type) { return type == T::kF32 || type == T::kF16 || type == T::kBF16; }

// Packs block b of one row (`src` points at that block) into the panel-block.
void PackQuantBlock(T type, const uint8_t* src, int r, uint8_t* out) {
  switch (type) {
    case T::kQ4_0:
      return PackLegacy<BlockQ4_0, false, false>(*reinterpret_cast<const BlockQ4_0*>(src), r, out);
    case T::kQ4_1:
      return PackLegacy<BlockQ4_1, true, false>(*reinterpret_cast<const BlockQ4_1*>(src), r, out);
    case T::kQ5_0:
      return PackLegacy<BlockQ5_0, false, true>(*reinterpret_cast<const BlockQ5_0*>(src), r, out);
    case T::kQ5_1:
      return PackLegacy<BlockQ5_1, true, true>(*reinterpret_cast<const BlockQ5_1*>(src), r, out);
    case T::kQ8_0:
      return PackQ8_0(*reinterpret_cast<const BlockQ8_0*>(src), r, out);
    case T::kQ4_K:
      return PackAffineK(*reinterpret_cast<const BlockQ4_K*>(src), r, out, kQ4KQs);
    case T::kQ5_K:
      return PackQ5_K(*reinterpret_cast<const BlockQ5_K*>(src), r, out);
    case T::kQ6_K:
      return PackQ6_K(*reinterpret_cast<const BlockQ6_K*>(src), r, out);
    case T::kQ2_K:
      return PackQ2_K(*reinterpret_cast<const BlockQ2_K*>(src), r, out);
    case T::kQ3_K:
      return PackQ3_K(*reinterpret_cast<const BlockQ3_K*>(src), r, out);
    case T::kIQ4_NL:
      return PackLegacy<BlockIQ4_NL, false, false>(*reinterpret_cast<const BlockIQ4_NL*>(src), r,
                                                   out);
    case T::kIQ4_XS:
      return PackIQ4_XS(*reinterpret_cast<const BlockIQ4_XS*>(src), r, out);
    case T::kIQ3_S:
      return PackIQ3_S(*reinterpret_cast<const BlockIQ3_S*>(src), r, out);
    case T::kIQ3_XXS:
      return PackIQ3_XXS(*reinterpret_cast<const BlockIQ3_XXS*>(src), r, out);
    case T::kIQ2_XS:
      return PackIQ2_XS(*reinterpret_cast<const BlockIQ2_XS*>(src), r, out);
    default:
      KVMESH_CHECK(false);
  }
}

void UnpackQuantBlock(T type, const uint8_t* in, int r, uint8_t* dst) {
  switch (type) {
    case T::kQ4_0:
      return UnpackLegacy<BlockQ4_0, false, false>(in, r, reinterpret_cast<BlockQ4_0*>(dst));
    case T::kQ4_1:
      return UnpackLegacy<BlockQ4_1, true, false>(in, r, reinterpret_cast<BlockQ4_1*>(dst));
    case T::kQ5_0:
      return UnpackLegacy<BlockQ5_0, false, true>(in, r, reinterpret_cast<BlockQ5_0*>(dst));
    case T::kQ5_1:
      return UnpackLegacy<BlockQ5_1, true, true>(in, r, reinterpret_cast<BlockQ5_1*>(dst));
    case T::kQ8_0:
      return UnpackQ8_0(in, r, reinterpret_cast<BlockQ8_0*>(dst));
    case T::kQ4_K:
      return UnpackAffineK(in, r, reinterpret_cast<BlockQ4_K*>(dst), kQ4KQs);
    case T::kQ5_K:
      return UnpackQ5_K(in, r, reinterpret_cast<BlockQ5_K*>(dst));
    case T::kQ6_K:
      return UnpackQ6_K(in, r, reinterpret_cast<BlockQ6_K*>(dst));
    case T::kQ2_K:
      return UnpackQ2_K(in, r, reinterpret_cast<BlockQ2_K*>(dst));
    case T::kQ3_K:
      return UnpackQ3_K(in, r, reinterpret_cast<BlockQ3_K*>(dst));
    case T::kIQ4_NL:
      return UnpackLegacy<BlockIQ4_NL, false, false>(in, r, reinterpret_cast<BlockIQ4_NL*>(dst));
    case T::kIQ4_XS:
      return UnpackIQ4_XS(in, r, reinterpret_cast<BlockIQ4_XS*>(dst));
    case T::kIQ3_S:
      return UnpackIQ3_S(in, r, reinterpret_cast<BlockIQ3_S*>(dst));
    case T::kIQ3_XXS:
      return UnpackIQ3_XXS(in, r, reinterpret_cast<BlockIQ3_XXS*>(dst));
    case T::kIQ2_XS:
      return UnpackIQ2_XS(in, r, reinterpret_cast<BlockIQ2_XS*>(dst));
    default:
      KVMESH_CHECK(false);
  }
}

}  // namespace

bool HasPanelLayout(TensorType type) {
  return IsFloatType(type) || QuantBlockInfo(type).block_size != 0;
}

size_t PanelBytes(TensorType type, int64_t cols) {
  switch (type) {
    case T::kF32:
      return static_cast<size_t>(cols) * kPanelRows * 4;
    case T::kF16:
      return static_cast<size_t>(cols) * kPanelRows * 2;
    case T::kBF16:
      return static_cast<size_t>(PaddedPairs(cols)) * kPanelRows * 4;
    default: {
      const BlockInfo info = QuantBlockInfo(type);
      KVMESH_CHECK(info.block_size != 0 && cols % info.block_size == 0);
      return static_cast<size_t>(cols / info.block_size) * kPanelRows * info.panel_bytes;
    }
  }
}

void PackPanels(TensorType type, const uint8_t* src, size_t src_row_bytes, int64_t rows,
                int64_t cols, int64_t panel_begin, int64_t panel_end, uint8_t* dst) {
  const size_t panel_bytes = PanelBytes(type, cols);
  std::memset(dst, 0, panel_bytes * static_cast<size_t>(panel_end - panel_begin));
  // Padding rows are packed from an all-zero row, so they unpack to one (a
  // zero Q8_0 level is stored as 0x80, not 0).
  const std::vector<uint8_t> zero_row(src_row_bytes, 0);
  for (int64_t p = panel_begin; p < panel_end; ++p) {
    uint8_t* panel = dst + (p - panel_begin) * panel_bytes;
    for (int r = 0; r < kPanelRows; ++r) {
      const int64_t row = p * kPanelRows + r;
      const uint8_t* src_row =
          row < rows ? src + static_cast<size_t>(row) * src_row_bytes : zero_row.data();
      if (IsFloatType(type)) {
        PackFloatRow(type, src_row, cols, r, panel);
        continue;
      }
      const BlockInfo info = QuantBlockInfo(type);
      for (int64_t b = 0; b < cols / info.block_size; ++b) {
        PackQuantBlock(type, src_row + b * info.bytes, r,
                       panel + b * kPanelRows * info.panel_bytes);
      }
    }
  }
}

void UnpackPanelRow(TensorType type, const uint8_t* panel, int64_t cols, int r, uint8_t* row) {
  if (IsFloatType(type)) return UnpackFloatRow(type, panel, cols, r, row);
  const BlockInfo info = QuantBlockInfo(type);
  KVMESH_CHECK(info.block_size != 0);
  for (int64_t b = 0; b < cols / info.block_size; ++b) {
    UnpackQuantBlock(type, panel + b * kPanelRows * info.panel_bytes, r, row + b * info.bytes);
  }
}

}  // namespace kvmesh::kernels
