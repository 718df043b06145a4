// The AMX tile instructions, for the AMX kernels (*_amx.cc). Those files are
// compiled with the AVX-512 tier's flags (the tile instructions are written
// here as assembly, so no compiler flag is needed for them) and are called
// only when HasAmx(). Same rules as avx512_util.h.
//
// The compiler's own tile macros do not tell it that a tile load reads
// memory, so it could keep the stores that fill a buffer past the load that
// reads them. These wrappers declare a memory clobber.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvmesh::kernels::amx {

// The shape of the eight tiles (palette 1): rows, and bytes per row.
struct TileShapes {
  uint8_t rows[8];
  uint16_t bytes[8];
};

// All eight tiles 16 rows of 64 bytes.
inline constexpr TileShapes kFullTiles = {{16, 16, 16, 16, 16, 16, 16, 16},
                                          {64, 64, 64, 64, 64, 64, 64, 64}};

// Loading the tile configuration is the first tile instruction of a call,
// and TileScope releases the tiles at the end, so no tile state outlives a
// call.
class TileScope {
 public:
  explicit TileScope(const TileShapes& shapes) {
    alignas(64) uint8_t config[64] = {};
    config[0] = 1;  // palette 1
    for (int t = 0; t < 8; ++t) {
      config[16 + 2 * t] = static_cast<uint8_t>(shapes.bytes[t]);  // little-endian uint16
      config[17 + 2 * t] = static_cast<uint8_t>(shapes.bytes[t] >> 8);
      config[48 + t] = shapes.rows[t];
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(config) : "memory");
  }
  ~TileScope() { __asm__ volatile("tilerelease" : : : "memory"); }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
};

// Tile kT from its rows at base, base + stride, ...
template <int kT>
inline void TileLoad(const void* base, size_t stride) {
  __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(base), "r"(stride), "i"(kT) : "memory");
}

template <int kT>
inline void TileStore(void* base, size_t stride) {
  __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(base), "r"(stride), "i"(kT) : "memory");
}

template <int kT>
inline void TileZero() {
  __asm__ volatile("tilezero %%tmm%c0" : : "i"(kT));
}

// C (int32 16 x 16) += A (int8, signed: 16 rows x K) * B (uint8: K / 4 rows
// of 16 lanes x 4), i.e. C[m][n] += sum over k of A[m][k] * B[k / 4][4n + k % 4].
template <int kC, int kA, int kB>
inline void TileDotSignedUnsigned() {
  __asm__ volatile("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(kC), "i"(kA), "i"(kB));
}

// The same with signed B: C[m][n] += sum over k of A[m][k] * B[k / 4][4n + k % 4].
template <int kC, int kA, int kB>
inline void TileDotSignedSigned() {
  __asm__ volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(kC), "i"(kA), "i"(kB));
}

}  // namespace kvmesh::kernels::amx
