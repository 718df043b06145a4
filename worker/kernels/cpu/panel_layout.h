// The panel layout: weight matrices repacked so that one SIMD lane holds one
// output row, and the matching "planar" layout of converted activations.
//
// Why: the CPU matrix kernels compute 16 output rows at once, one per 32-bit
// lane of a 512-bit register (two 256-bit halves with AVX2). Then every
// output element is reduced along K by its own lane, block after block, in
// exactly the order of the scalar reference vec_dot - so the result for a row
// and a token does not depend on how many tokens share the call (batch
// invariance), on the thread split, or on the tile sizes; and for the
// quantized types it equals the reference bit for bit. Per-block scales of 16
// rows load as one vector instead of 16 scalars.
//
// Weights. Rows are grouped in panels of kPanelRows; the last panel is padded
// with zero rows. A panel holds the same bytes as its 16 rows in GGUF order
// (so repacking costs no extra memory traffic per token), rearranged per block
// of the type - except IQ3_S's, expanded below. In a panel-block, a "group vector" is 64 bytes
// holding 4 consecutive elements of each of the 16 rows (bytes 4r..4r+3 belong to row r); a "mask"
// is 8 bytes with one bit per byte of a group vector. Per type:
//
//   Q4_0  d[16] f16 | 4 vectors of nibbles: vector c has group c (elements
//         4c..4c+3) in its low nibbles and group c+4 in its high nibbles
//   Q4_1  d[16] f16 | m[16] f16 | nibbles as Q4_0
//   Q5_0  d[16] f16 | 8 masks: fifth bit of group g | nibbles as Q4_0
//   Q5_1  d[16] f16 | m[16] f16 | 8 masks | nibbles as Q4_0
//   Q8_0  d[16] f16 | 8 vectors: group g, each level stored as level ^ 0x80
//         (i.e. level + 128, unsigned)
//   Q4_K  d[16] f16 | dmin[16] f16 | 3 vectors of packed 6-bit scales/mins
//         (bytes 4w..4w+3 of row r's 12 scale bytes at 64w + 4r) |
//         32 vectors of nibbles: vector 8c+g has group g of sub-block 2c in
//         its low nibbles and group g of sub-block 2c+1 in its high nibbles
//   Q5_K  as Q4_K, with 64 masks (fifth bit of group g of sub-block j at
//         mask 8j+g) between the scales and the nibbles
//   Q6_K  d[16] f16 | scales[16 sub-blocks][16 rows] int8 |
//         32 vectors of low nibbles (vector k: group k low, group k+32 high;
//         group G = elements 4G..4G+3) | 16 vectors of top bits (vector m:
//         bits 2s, 2s+1 of each byte = top two bits of group m + 16s)
//   Q2_K  d[16] f16 | dmin[16] f16 | 4 vectors: the scales bytes as lanes
//         (bytes 4w..4w+3 of row r's 16 at 64w + 4r) | 16 vectors: the qs
//         bytes as lanes. Vector v = 8h + c then holds group 32h + 8q + c
//         (elements 4G..4G+3) at bits 2q, 2q+1 of each byte.
//   Q3_K  d[16] f16 | 3 vectors: the 12 scale bytes as lanes | 16 vectors:
//         the qs bytes as lanes (the low two bits of each level, as Q2_K) |
//         8 vectors: the hmask bytes as lanes (vector c holds the third bit
//         of group 32h + 8q + c at bit 4h + q)
//   IQ4_NL  as Q4_0 (codes instead of levels)
//   IQ4_XS  d[16] f16 | scales_h[16] u16 | 1 vector: scales_l as lanes |
//         32 vectors: the qs bytes as lanes (vector 4j + c: group c of
//         sub-block j in its low nibbles, group c + 4 in its high nibbles)
//   IQ3_S  expanded, 134 bytes per row and block against the file's 110:
//         d[16] f16 | 1 vector: the scales as lanes | 32 vectors of nibbles
//         ordered as IQ4_XS's, each value's codebook level (0..7, the
//         magnitude 2 * level + 1) with its sign as bit 3. Gathering
//         codebook points per group cost more than the bytes saved; the
//         GGUF block comes back exactly on unpacking (kIq3sPointOfLevels)
//   IQ3_XXS  d[16] f16 | 24 vectors: the qs bytes as lanes (16 of point
//         indices, then vector 16 + j: sub-block j's signs-and-scale word)
//   IQ2_XS  d[16] f16 | 16 vectors: the qs words as lanes (vector v: the
//         words of groups 2v, 2v + 1) | 2 vectors: the scales as lanes
//   F32   one 64-byte vector per element k: 16 floats
//   F16   one 32-byte vector per element k: 16 halves
//   BF16  one 64-byte vector per element pair (2p, 2p+1): lane r holds the
//         two bf16 of row r, element 2p in the low half; K padded to even
//
// Activations. Each token's converted row ("planar row") is laid out for
// broadcast loads, with the same values the reference from_float of the
// weight's vec_dot_type produces:
//
//   Q8_0  levels[K] int8 | d[K/32] float | then -8, -16 and -128 times the
//         sum of each block's levels, three int32 arrays of K/32 (the offsets
//         of Q4_0, Q5_0 and Q8_0 as the panels store them)
//   Q8_1  levels[K] int8 | d[K/32] float | s[K/32] float
//   Q8_K  levels[K] int8 | d[K/256] float | bsum32[K/32] int16 (sum of each
//         32 levels) | neg32_sum8[K/8] int32 (-32 * sum of each 8 levels) |
//         bsum16[K/16] int16 (sum of each 16 levels, the block's bsums)
//   F32   values[K] float
//   F16   values[K] float (each exactly an f16)
//   BF16  values[K rounded up to even] bf16
//
// Each part starts on a 64-byte boundary. All functions here are pure and
// thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "common/tensor_type.h"

namespace kvmesh::kernels {

inline constexpr int kPanelRows = 16;

inline int64_t NumPanels(int64_t rows) { return (rows + kPanelRows - 1) / kPanelRows; }

// True when `type` has a panel layout (every weight type the engine computes
// with).
bool HasPanelLayout(TensorType type);

// Bytes of one panel of `cols` columns.
size_t PanelBytes(TensorType type, int64_t cols);

// Packs panels [panel_begin, panel_end) of a rows x cols matrix whose row i
// starts at src + i * src_row_bytes (GGUF layout) into dst, which receives
// (panel_end - panel_begin) * PanelBytes bytes. Rows past `rows` are zero.
void PackPanels(TensorType type, const uint8_t* src, size_t src_row_bytes, int64_t rows,
                int64_t cols, int64_t panel_begin, int64_t panel_end, uint8_t* dst);

// The inverse for one row: writes row `r` (0..15) of `panel` in GGUF layout
// (RowSizeBytes of the type) to `row`.
void UnpackPanelRow(TensorType type, const uint8_t* panel, int64_t cols, int r, uint8_t* row);

// Where the parts of a planar activation row lie (byte offsets in the row).
struct PlanarLayout {
  TensorType type = TensorType::kF32;  // a vec_dot_type
  int64_t cols = 0;
  size_t levels = 0;      // int8 levels, or float / bf16 values
  size_t scales = 0;      // d per block (float)
  size_t aux = 0;         // the -8 sums (Q8_0), s (Q8_1), bsum32 (Q8_K)
  size_t aux_stride = 0;  // Q8_0: bytes from one -offset * sum array to the next
  size_t aux2 = 0;        // neg32_sum8 (Q8_K)
  size_t aux3 = 0;        // bsum16 (Q8_K)
  size_t row_bytes = 0;
};

PlanarLayout GetPlanarLayout(TensorType vec_dot_type, int64_t cols);

// Converts one row of `cols` activations in the vec_dot_type's block format
// (what its from_float writes) into the planar layout, and back.
void BlocksToPlanar(const PlanarLayout& layout, const void* blocks, uint8_t* planar);
void PlanarToBlocks(const PlanarLayout& layout, const uint8_t* planar, void* blocks);

}  // namespace kvmesh::kernels
