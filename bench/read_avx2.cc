#include <immintrin.h>

#include "bench/read_loops.h"

namespace kvmesh::bench {

uint64_t ReadAvx2(const uint8_t* data, size_t bytes) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  for (size_t i = 0; i < bytes; i += 128) {
    a = _mm256_add_epi64(a, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i)));
    b = _mm256_add_epi64(b, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 32)));
    c = _mm256_add_epi64(c, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 64)));
    d = _mm256_add_epi64(d, _mm256_load_si256(reinterpret_cast<const __m256i*>(data + i + 96)));
  }
  const __m256i s = _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d));
  alignas(32) uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), s);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}

}  // namespace kvmesh::bench
