// The AMX policy of the 32-element types with x = d * (level - offset):
// Q4_0, Q5_0 and Q8_0 (q4_0_amx.cc, q5_0_amx.cc, q8_0_amx.cc); see
// amx_gemm.h.
//
// The AVX-512 kernels form, per block and token, the exact sum over the block
// of (level - offset) * x, then acc += float(sum) * (dw * dx). Here the
// weights are signed bytes level - offset (tdpbssd), so a tile product is
// that sum; each block needs its own, so the products run over K = 32 (the
// activation tile is 16 rows of 32 bytes, the weight tile 8 rows of 64). A
// unit is four blocks, and its four products fill four tiles.
//
// A Levels policy gives the type, as the AVX-512 policies do:
//   kBlockBytes
//   kOffset        x = d * (stored level - kOffset)
//   Unpack(pb, w)  the 8 group vectors of panel-block pb as stored (unsigned)
#pragma once

#include "worker/kernels/cpu/simd/amx_gemm.h"

namespace kvmesh::kernels::amx {

template <typename Levels>
struct Legacy {
  static constexpr TensorType kActivationType = TensorType::kQ8_0;
  static constexpr int64_t kUnitElements = 128;
  static constexpr size_t kUnitBytes = 4 * Levels::kBlockBytes;

  // Tiles: products 0-3, activations 4 (16 tokens x 32 levels), weights 5
  // (the block's 8 group vectors).
  static constexpr TileShapes kTileShapes = {{16, 16, 16, 16, 16, 8, 16, 16},
                                             {64, 64, 64, 64, 32, 64, 64, 64}};

  struct alignas(64) Operands {
    int8_t b[4][8][64];  // block i: its 8 group vectors
  };
  using Products = int32_t[4][kTileTokens][16];
  struct Block {
    __m512 dw[4];
  };

  void Prepare(const uint8_t* pu, Operands* w, Block* b) const {
    for (int i = 0; i < 4; ++i) {
      const uint8_t* pb = pu + i * Levels::kBlockBytes;
      __m512i g[8];
      Levels::Unpack(pb, g);
      const __m512i offset = _mm512_set1_epi8(static_cast<char>(Levels::kOffset));
      for (int k = 0; k < 8; ++k) _mm512_store_si512(w->b[i][k], _mm512_sub_epi8(g[k], offset));
      b->dw[i] = avx512::LoadHalves16(pb);
    }
  }

  static void Multiply(const uint8_t* x, size_t stride, const Operands& w, Products& c) {
    MultiplyBlock<0>(x, stride, w);
    MultiplyBlock<1>(x, stride, w);
    MultiplyBlock<2>(x, stride, w);
    MultiplyBlock<3>(x, stride, w);
    TileStore<0>(c[0], 64);
    TileStore<1>(c[1], 64);
    TileStore<2>(c[2], 64);
    TileStore<3>(c[3], 64);
  }

  template <int kI>
  static void MultiplyBlock(const uint8_t* x, size_t stride, const Operands& w) {
    constexpr int kX = 4, kW = 5;
    TileZero<kI>();
    TileLoad<kX>(x + 32 * kI, stride);
    TileLoad<kW>(w.b[kI], 64);
    TileDotSignedSigned<kI, kX, kW>();
  }

  // acc += float(sum) * (dw * dx) per block, in block order, as the AVX-512
  // kernels.
  void Steps(const Block& b, const TokenRows& rows, int64_t t0, const Products& c,
             float (*acc)[16]) const {
    for (int t = 0; t < kTileTokens; ++t) {
      __m512 sum = LoadSums(acc[t0 + t], rows.unit);
      for (int i = 0; i < 4; ++i) {
        const __m512 d = _mm512_mul_ps(b.dw[i], _mm512_set1_ps(rows.D(t0 + t, 4 * rows.unit + i)));
        sum = _mm512_add_ps(sum, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[i][t])), d));
      }
      _mm512_store_ps(acc[t0 + t], sum);
    }
  }
};

}  // namespace kvmesh::kernels::amx
