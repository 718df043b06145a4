// Streaming read loops for the bandwidth probe, one per instruction set (each
// in its own file with its own target flags). Each returns a checksum of the
// bytes so the loads cannot be optimised away; `bytes` is a multiple of 256
// and `data` 64-byte aligned.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvmesh::bench {

uint64_t ReadAvx512(const uint8_t* data, size_t bytes);
uint64_t ReadAvx2(const uint8_t* data, size_t bytes);

}  // namespace kvmesh::bench
