// Scalar reference row operations of the transformer forward pass: RMS norm,
// softmax, SiLU / SwiGLU and rotary position embeddings (RoPE).
//
// Each computes what ggml's CPU backend computes, in the same order of float
// operations where that order changes the result (sums of squares and of
// exponentials in double, RoPE angles built up by repeated multiplication in
// float), so activations track llama.cpp's. Pure functions on caller-owned
// buffers; safe from any thread. Outputs may alias inputs unless noted.
#pragma once

#include <cstdint>

#include "worker/kernels/cpu/cpu_features.h"

namespace kvmesh::kernels {

// out[i] = (x[i] * s) * weight[i] with s = 1 / sqrtf(mean(x^2) + eps).
void RmsNorm(const float* x, const float* weight, float* out, int64_t n, float eps);

// x <- exp(x - max(x)) / sum(exp(x - max(x))), in place. At least one value
// must be finite and not -inf.
void Softmax(float* x, int64_t n);

// out[i] = x[i] / (1 + exp(-x[i])).
void Silu(const float* x, float* out, int64_t n);

// out[i] = silu(gate[i]) * up[i]: the gated feed-forward activation.
void SwiGlu(const float* gate, const float* up, float* out, int64_t n);

// Below this, exp(x - shift) counts as 0 in ExpShifted. Softmax weights
// under e^-50 of the largest change no float sum they join (n · e^-50 is far
// under a float ulp for any context length), but left in they become
// subnormal floats, or products with V values that are, and each subnormal
// operand costs an x86 core about a hundred cycles: long contexts with a wide
// spread of scores ran several times slower. Not flushing-to-zero through
// MXCSR keeps every thread's arithmetic the same whoever set its flags.
inline constexpr float kExpShiftedFloor = -50.0f;

// x[i] <- exp(x[i] - shift) in place (softmax's numerators), 0 where x[i] -
// shift < kExpShiftedFloor; returns their sum, added in double from the
// first to the last.
double ExpShifted(float* x, int64_t n, float shift);

// x[i] <- x[i] * factor in place (softmax's normalisation).
void Scale(float* x, int64_t n, float factor);

// x[i] <- the f16 value nearest x[i] (ties to even), as a float, in place:
// what a value goes through on its way into an f16 operand.
void RoundToHalf(float* x, int64_t n);

// Rotary embeddings of one head vector, in place. The first n_rot dimensions
// (even, <= head_dim) rotate; the rest pass through. Pair i (0 <= i < n_rot/2)
// turns by theta_i = pos * freq_scale * freq_base^(-2i / n_rot).
//
// RopeNorm rotates adjacent pairs (x[2i], x[2i+1]) (LLaMA-style GGUFs);
// RopeNeox rotates (x[i], x[i + n_rot/2]) (GPT-NeoX / Qwen style).
void RopeNorm(float* head, int head_dim, int n_rot, int64_t pos, float freq_base, float freq_scale);
void RopeNeox(float* head, int head_dim, int n_rot, int64_t pos, float freq_base, float freq_scale);

// The per-token row ops of the forward pass for one ISA tier: the functions
// above for Isa::kScalar, SIMD variants otherwise (ops_avx2.cc,
// ops_avx512.cc), with the same contracts and these guarantees:
//  - rms_norm equals RmsNorm bit for bit (its sum of squares stays
//    sequential in double, as ggml's is; the scaling is vectorized);
//  - swiglu computes exp in double precision and rounds it once to float -
//    the correctly rounded expf - where the reference calls libm's expf, then
//    takes the reference's float steps. libm's expf is off by an ulp near
//    ties (glibc 2.36: ~0.06% of inputs), so the two agree to a few ulps and are
//    equal almost everywhere (the tests count);
//  - scale equals Scale bit for bit (one rounded product per value);
//  - round_to_half equals RoundToHalf bit for bit (F16C conversions, which
//    round to nearest even as the reference does); a NaN stays a NaN;
//  - exp_shifted computes its exps like swiglu (the correctly rounded expf
//    where the reference calls libm's), gives 0 where the reference does
//    (below kExpShiftedFloor), and sums them in double, in SIMD lanes
//    reduced in a fixed order (the reference adds one after another), so the
//    sums agree to a few double ulps.
struct RowOps {
  void (*rms_norm)(const float* x, const float* weight, float* out, int64_t n, float eps);
  void (*swiglu)(const float* gate, const float* up, float* out, int64_t n);
  void (*round_to_half)(float* x, int64_t n);
  double (*exp_shifted)(float* x, int64_t n, float shift);
  void (*scale)(float* x, int64_t n, float factor);
};

// `isa` must be supported by the host.
const RowOps& GetRowOps(Isa isa);

}  // namespace kvmesh::kernels
