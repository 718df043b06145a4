// Parity harness for vec_dot kernels: checks a candidate VecDotFn for a type
// against the exact dot product of the dequantized operands.
//
// For each test row the harness quantizes a weight row with the type's
// reference from_float, an activation row with the vec_dot_type's from_float,
// dequantizes both with the reference to_float, and takes their dot product
// in double. That is what the integer block math computes up to float
// rounding of the block scales, so a correct kernel - scalar, SIMD or GPU -
// lands within a small multiple of float epsilon of it:
//
//   |candidate - reference| <= relative_tolerance * sum_i |w_i * x_i|
//
// (the right-hand side is the conditioning of the sum, so cancellation does
// not turn correct kernels into failures). Types paired with Q8_1 get one
// further allowance: Q8_1 caches s = d * sum(q) as an f16 with the unrounded
// d, and the weight offset multiplies s rather than the dequantized x.
//
// Rows come from TestRandom, which is defined here (SplitMix64 plus integer
// arithmetic only), so every platform and standard library sees the same
// values. Single-threaded; holds no global state.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "worker/kernels/cpu/type_traits.h"

namespace kvmesh::kernels {

class TestRandom {
 public:
  explicit TestRandom(uint64_t seed) : state_(seed) {}

  uint64_t NextBits();
  // Uniform in [0, 1) with 24 random bits.
  float Uniform();
  // Bell-shaped, mean 0, variance 1 (sum of four uniforms; |value| < 3.47).
  float Bell();

 private:
  uint64_t state_;
};

// n values shaped like model weights or activations: bell-shaped, with the
// magnitude changing every 32 values (by powers of two from 1/4 to 4) and
// about one value in 64 an outlier eight times larger, so per-block scales and
// clamping are exercised.
std::vector<float> MakeTestRow(TestRandom& rng, int64_t n);

struct ParityOptions {
  // Random row pairs checked at each length; an all-zero weight row and an
  // all-zero activation row are always checked in addition.
  int rows_per_length = 16;
  // Lengths are one block, three blocks, `long_length` and `long_length` plus
  // one block (rounded up to whole blocks), so vector loops and tails are
  // both covered.
  int64_t long_length = 4096;
  uint64_t seed = 20240601;
  double relative_tolerance = 1e-5;
};

struct ParityReport {
  bool ok = true;
  int rows_checked = 0;
  // Largest |candidate - reference| / allowed seen (<= 1 when ok).
  double worst_ratio = 0.0;
  // Human-readable description of the first failing row, empty when ok.
  std::string failure;
};

// Checks `candidate` (a VecDotFn for traits.type) on the rows described by
// `options`. traits must have a vec_dot_type with traits of its own.
ParityReport CheckVecDotParity(const TypeTraits& traits, VecDotFn candidate,
                               const ParityOptions& options = {});

}  // namespace kvmesh::kernels
