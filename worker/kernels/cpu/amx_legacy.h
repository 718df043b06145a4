// The AMX policy of the 32-element types with x = d * (level - offset):
// Q4_0, Q5_0 and Q8_0 (q4_0_amx.cc, q5_0_amx.cc, q8_0_amx.cc); see
// amx_gemm.h.
//
// The AVX-512 kernels form, per block and token, the exact sum over the block
// of (level - offset) * x, then acc += float(sum) * (dw * dx). Here the
// weights are signed bytes level - offset (tdpbssd), so a tile product is
// that sum. A product spans a K step of 64 elements, two blocks, and each
// block needs its own: a block's operand holds its 8 group vectors in its
// half of the step and zeros in the other. A unit is four blocks, and its
// four products fill four tiles.
//
// A Levels policy gives the type:
//   kBlockBytes
//   Get(pb, w)  the 8 group vectors of panel-block pb as level - offset
#pragma once

#include "worker/kernels/cpu/amx_gemm.h"

namespace kvmesh::kernels::amx {

template <typename Levels>
struct Legacy {
  static constexpr TensorType kActivationType = TensorType::kQ8_0;
  static constexpr int64_t kUnitElements = 128;
  static constexpr size_t kUnitBytes = 4 * Levels::kBlockBytes;

  // Block i's operand: rows 8 (i % 2) .. 8 (i % 2) + 7 hold its group vectors
  // (K step i / 2); the other rows stay zero.
  struct alignas(64) Operands {
    int8_t b[4][16][64] = {};
  };
  using Products = int32_t[4][kTileTokens][16];
  struct Block {
    __m512 dw[4];
  };

  void Prepare(const uint8_t* pu, Operands* w, Block* b) const {
    for (int i = 0; i < 4; ++i) {
      const uint8_t* pb = pu + i * Levels::kBlockBytes;
      __m512i g[8];
      Levels::Get(pb, g);
      for (int k = 0; k < 8; ++k) _mm512_store_si512(w->b[i][8 * (i % 2) + k], g[k]);
      b->dw[i] = avx512::LoadHalves16(pb);
    }
  }

  static void Multiply(const uint8_t* x, size_t stride, const Operands& w, Products& c) {
    constexpr int kX = 4, kEven = 5, kOdd = 6;
    TileZero<0>();
    TileZero<1>();
    TileZero<2>();
    TileZero<3>();
    TileLoad<kX>(x, stride);
    TileLoad<kEven>(w.b[0], 64);
    TileLoad<kOdd>(w.b[1], 64);
    TileDotSignedSigned<0, kX, kEven>();
    TileDotSignedSigned<1, kX, kOdd>();
    TileLoad<kX>(x + 64, stride);
    TileLoad<kEven>(w.b[2], 64);
    TileLoad<kOdd>(w.b[3], 64);
    TileDotSignedSigned<2, kX, kEven>();
    TileDotSignedSigned<3, kX, kOdd>();
    TileStore<0>(c[0], 64);
    TileStore<1>(c[1], 64);
    TileStore<2>(c[2], 64);
    TileStore<3>(c[3], 64);
  }

  // acc += float(sum) * (dw * dx) per block, in block order, as the AVX-512
  // kernels.
  void Steps(const Block& b, const TokenRows& rows, int64_t t0, const Products& c,
             float (*acc)[16]) const {
    for (int t = 0; t < kTileTokens; ++t) {
      __m512 sum = _mm512_load_ps(acc[t0 + t]);
      for (int i = 0; i < 4; ++i) {
        const __m512 d = _mm512_mul_ps(b.dw[i], _mm512_set1_ps(rows.D(t0 + t, 4 * rows.unit + i)));
        sum = _mm512_add_ps(sum, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c[i][t])), d));
      }
      _mm512_store_ps(acc[t0 + t], sum);
    }
  }
};

}  // namespace kvmesh::kernels::amx
