// GCC 12 warns about the undefined registers inside its own AVX-512
// intrinsics (GCC bug 105593); only its header is exempted.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

#include "bench/read_loops.h"

namespace kvmesh::bench {

uint64_t ReadAvx512(const uint8_t* data, size_t bytes) {
  // Four independent accumulators, four cache lines per iteration.
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  for (size_t i = 0; i < bytes; i += 256) {
    a = _mm512_add_epi64(a, _mm512_load_si512(data + i));
    b = _mm512_add_epi64(b, _mm512_load_si512(data + i + 64));
    c = _mm512_add_epi64(c, _mm512_load_si512(data + i + 128));
    d = _mm512_add_epi64(d, _mm512_load_si512(data + i + 192));
  }
  return static_cast<uint64_t>(
      _mm512_reduce_add_epi64(_mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d))));
}

}  // namespace kvmesh::bench
