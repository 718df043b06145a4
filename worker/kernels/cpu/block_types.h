// Byte layouts of the quantized blocks the CPU kernels read and write.
//
// Each struct is one block exactly as it sits in a GGUF tensor (ggml's layout,
// little-endian, no padding), so a row of n elements of type T is simply
// n / block_size consecutive structs. Half-precision fields hold raw IEEE f16
// bits (see common/half.h). Sizes are pinned below with literals, because
// common/tensor_type.h's table is not constexpr; type_traits_test checks the
// structs against that table too.
//
// Notation used by the kernels: a "level" is the small unsigned integer stored
// in the block (e.g. 0..15 for 4-bit types); the value it represents is
// scale * (level - offset) or scale * level - min, per type.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/check.h"

namespace kvmesh::kernels {

// Elements per block of the "legacy" types (Q4_0 … Q8_1).
inline constexpr int kLegacyBlockSize = 32;
// Elements per super-block of the K types (Q2_K … Q8_K) and IQ4_XS.
inline constexpr int kSuperBlockSize = 256;
// Bytes of packed 6-bit (scale, min) pairs in a Q4_K / Q5_K super-block.
inline constexpr int kPackedScaleBytes = 12;

// x = d * (level - 8), level in 0..15. qs[j] holds element j in its low
// nibble and element j + 16 in its high nibble.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kLegacyBlockSize / 2];
};

// x = d * level + m, level in 0..15; nibble order as Q4_0.
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kLegacyBlockSize / 2];
};

// x = d * (level - 16), level in 0..31. Low nibbles as Q4_0; bit j of the
// little-endian 32-bit word qh is the fifth bit of element j.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlockSize / 2];
};

// x = d * level + m, level in 0..31; bits as Q5_0.
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kLegacyBlockSize / 2];
};

// x = d * qs[j].
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kLegacyBlockSize];
};

// KV pages only (TensorType::kQ3_NL, 3.5 bits per value): x = d *
// kQ3NlLevels[code], code in 0..7. The levels are the 8-level Lloyd-Max
// quantizer of a unit Gaussian (+-0.2451, 0.7560, 1.3440, 2.1520) scaled so
// that the outermost is 127 and rounded to integers, so that a dot product
// with a q8_0 query is an exact integer sum, as q4_0's is. Rows are Hadamard
// rotated before they are encoded, which makes their values close to
// Gaussian. Bits (element j of 32): the low two bits of its code are bits
// 2 * (j / 8) and up of ql[j % 8]; the high bit is bit j of the little-endian
// 32-bit word qh.
struct BlockQ3_NL {
  uint16_t d;
  uint8_t ql[kLegacyBlockSize / 4];
  uint8_t qh[kLegacyBlockSize / 8];
};
inline constexpr int8_t kQ3NlLevels[8] = {-127, -79, -45, -14, 14, 45, 79, 127};

// Activation block paired with Q4_1 / Q5_1: x = d * qs[j], and s caches
// d * sum(qs) so the weight's offset m contributes m * s without a loop.
struct BlockQ8_1 {
  uint16_t d;
  uint16_t s;
  int8_t qs[kLegacyBlockSize];
};

// Eight sub-blocks of 32: x = d * scale_j * level - dmin * min_j, level in
// 0..15, (scale_j, min_j) 6-bit pairs packed into `scales` (see
// k_quant_common.h). qs[32 * c + l] holds element 64 * c + l in its low nibble
// and element 64 * c + 32 + l in its high nibble.
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kPackedScaleBytes];
  uint8_t qs[kSuperBlockSize / 2];
};

// As Q4_K with a fifth bit: level in 0..31. For chunk c (64 elements), bit 2c
// of qh[l] is the high bit of element 64c + l and bit 2c + 1 that of element
// 64c + 32 + l.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kPackedScaleBytes];
  uint8_t qh[kSuperBlockSize / 8];
  uint8_t qs[kSuperBlockSize / 2];
};

// Sixteen sub-blocks of 16: x = d * scales[j] * (level - 32), level in 0..63.
// For half h (128 elements) and l in 0..31: ql[64h + l] holds the low nibbles
// of elements 128h + l (low) and 128h + 64 + l (high); ql[64h + 32 + l] those
// of 128h + 32 + l and 128h + 96 + l; qh[32h + l] holds the top two bits of
// those four elements at bit offsets 0, 2, 4, 6 (in the order l, l+32, l+64,
// l+96).
struct BlockQ6_K {
  uint8_t ql[kSuperBlockSize / 2];
  uint8_t qh[kSuperBlockSize / 4];
  int8_t scales[kSuperBlockSize / 16];
  uint16_t d;
};

// Sixteen sub-blocks of 16: x = d * scale_j * level - dmin * min_j, level in
// 0..3; scales[j] holds scale_j (4 bits) in its low nibble and min_j in its
// high nibble. For half h (128 elements) and l in 0..31, bits 2q, 2q+1 of
// qs[32h + l] are the level of element 128h + 32q + l (q = 0..3).
struct BlockQ2_K {
  uint8_t scales[kSuperBlockSize / 16];
  uint8_t qs[kSuperBlockSize / 4];
  uint16_t d;
  uint16_t dmin;
};

// Sixteen sub-blocks of 16: x = d * (scale_j - 32) * (level - 4), level in
// 0..7, scale_j 6 bits. The low two bits of a level sit as in Q2_K's qs; its
// third bit is bit 4h + q of hmask[l] (element 128h + 32q + l). Scale j keeps
// its low four bits in scales[j] (j < 8, low nibble) or scales[j - 8] (high
// nibble), and its top two bits at bit 2 * (j / 4) of scales[8 + j % 4].
struct BlockQ3_K {
  uint8_t hmask[kSuperBlockSize / 8];
  uint8_t qs[kSuperBlockSize / 4];
  uint8_t scales[kPackedScaleBytes];
  uint16_t d;
};

// The 16 values of the non-linear 4-bit types (IQ4_NL, IQ4_XS): a code c
// stands for kIq4Values[c]. Integers, so dot products with 8-bit activations
// are exact integer sums.
inline constexpr int8_t kIq4Values[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                          1,    13,   25,  38,  53,  69,  89,  113};

// x = d * kIq4Values[code]; qs[j] holds the code of element j in its low
// nibble and that of element j + 16 in its high nibble (as Q4_0).
struct BlockIQ4_NL {
  uint16_t d;
  uint8_t qs[kLegacyBlockSize / 2];
};

// Eight sub-blocks of 32: x = d * (scale_j - 32) * kIq4Values[code], scale_j
// 6 bits: its low four bits are nibble j % 2 of scales_l[j / 2], its top two
// bits are bits 2j, 2j + 1 of scales_h. Sub-block j's codes are in
// qs[16j .. 16j + 15], nibbles ordered as IQ4_NL's.
struct BlockIQ4_XS {
  uint16_t d;
  uint16_t scales_h;
  uint8_t scales_l[kSuperBlockSize / 64];
  uint8_t qs[kSuperBlockSize / 2];
};

// The grid types (iq_grids.h): a group of 4 or 8 magnitudes is one point of
// a codebook, and each value has a sign.
//
// IQ3_S: eight sub-blocks of 32, x = d * (1 + 2 * scale_j) * point value *
// sign, scale_j the nibble j % 2 of scales[j / 2]. Group g (elements
// 4g..4g+3) names point qs[g] + 256 * (bit g % 8 of qh[g / 8]) of the 512;
// bit e % 8 of signs[e / 8] is element e's sign.
struct BlockIQ3_S {
  uint16_t d;
  uint8_t qs[kSuperBlockSize / 4];
  uint8_t qh[kSuperBlockSize / 32];
  uint8_t signs[kSuperBlockSize / 8];
  uint8_t scales[kSuperBlockSize / 64];
};

// IQ3_XXS: eight sub-blocks of 32, x = d * (0.5 + scale_j) * 0.5 * point
// value * sign. qs[g] (g < 64) names group g's point of the 256; then, per
// sub-block j, a little-endian 32-bit word at qs[64 + 4j]: bits 7l..7l+6 are
// the sign code of its elements 8l..8l+7 (GridSigns), bits 28..31 scale_j.
struct BlockIQ3_XXS {
  uint16_t d;
  uint8_t qs[3 * kSuperBlockSize / 8];
};

// IQ2_XS: sixteen runs of 16 with a scale each, x = d * (0.5 + scale) * 0.25
// * point value * sign. qs[g] describes elements 8g..8g+7: bits 0..8 name
// the point of the 512, bits 9..15 are the sign code. Run r's scale is the
// nibble r % 2 of scales[r / 2].
struct BlockIQ2_XS {
  uint16_t d;
  uint16_t qs[kSuperBlockSize / 8];
  uint8_t scales[kSuperBlockSize / 32];
};

// Activation block paired with the K types: x = d * qs[j], d a plain float,
// and bsums[g] = sum of qs over elements 16g .. 16g + 15 (lets the weight's
// per-sub-block mins be applied without touching qs).
struct BlockQ8_K {
  float d;
  int8_t qs[kSuperBlockSize];
  int16_t bsums[kSuperBlockSize / 16];
};

// Blocks in a row of n elements; n must be a whole number of blocks.
inline int64_t NumBlocks(int64_t n, int64_t block_size) {
  KVMESH_CHECK(n >= 0 && n % block_size == 0);
  return n / block_size;
}

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ3_NL) == 14);
static_assert(sizeof(BlockQ8_1) == 36);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockIQ4_NL) == 18);
static_assert(sizeof(BlockIQ4_XS) == 136);
static_assert(sizeof(BlockIQ3_S) == 110);
static_assert(sizeof(BlockIQ3_XXS) == 98);
static_assert(sizeof(BlockIQ2_XS) == 74);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace kvmesh::kernels
