// The scalar reference kernels, one .cc file per tensor type.
//
// Most callers should go through GetTypeTraits (type_traits.h); these names
// exist so the table can be built and so SIMD variants and tests can name a
// specific reference. Signatures and contracts are those of ToFloatFn,
// FromFloatFn and VecDotFn: n counts elements and is a whole number of blocks.
//
// Accumulation follows ggml's scalar code: the float types sum products in
// double; the quantized types form exact int32 sums inside each block and
// accumulate the scaled block results in float.
#pragma once

#include <cstdint>

namespace kvmesh::kernels {

// f32.cc
void DequantizeRowF32(const void* src, float* dst, int64_t n);
void QuantizeRowF32(const float* src, void* dst, int64_t n);
float VecDotF32(int64_t n, const void* w, const void* x);

// f16.cc
void DequantizeRowF16(const void* src, float* dst, int64_t n);
void QuantizeRowF16(const float* src, void* dst, int64_t n);
float VecDotF16(int64_t n, const void* w, const void* x);

// bf16.cc
void DequantizeRowBf16(const void* src, float* dst, int64_t n);
void QuantizeRowBf16(const float* src, void* dst, int64_t n);
float VecDotBf16(int64_t n, const void* w, const void* x);

// q4_0.cc (vec_dot against Q8_0)
void DequantizeRowQ4_0(const void* src, float* dst, int64_t n);
void QuantizeRowQ4_0(const float* src, void* dst, int64_t n);
float VecDotQ4_0Q8_0(int64_t n, const void* w, const void* x);

// q3_nl.cc (KV pages only; vec_dot against Q8_0)
void DequantizeRowQ3_NL(const void* src, float* dst, int64_t n);
void QuantizeRowQ3_NL(const float* src, void* dst, int64_t n);
float VecDotQ3_NLQ8_0(int64_t n, const void* w, const void* x);

// q4_1.cc (vec_dot against Q8_1)
void DequantizeRowQ4_1(const void* src, float* dst, int64_t n);
void QuantizeRowQ4_1(const float* src, void* dst, int64_t n);
float VecDotQ4_1Q8_1(int64_t n, const void* w, const void* x);

// q5_0.cc (vec_dot against Q8_0)
void DequantizeRowQ5_0(const void* src, float* dst, int64_t n);
void QuantizeRowQ5_0(const float* src, void* dst, int64_t n);
float VecDotQ5_0Q8_0(int64_t n, const void* w, const void* x);

// q5_1.cc (vec_dot against Q8_1)
void DequantizeRowQ5_1(const void* src, float* dst, int64_t n);
void QuantizeRowQ5_1(const float* src, void* dst, int64_t n);
float VecDotQ5_1Q8_1(int64_t n, const void* w, const void* x);

// q8_0.cc (weights and activations)
void DequantizeRowQ8_0(const void* src, float* dst, int64_t n);
void QuantizeRowQ8_0(const float* src, void* dst, int64_t n);
float VecDotQ8_0Q8_0(int64_t n, const void* w, const void* x);

// q8_1.cc (activations only)
void DequantizeRowQ8_1(const void* src, float* dst, int64_t n);
void QuantizeRowQ8_1(const float* src, void* dst, int64_t n);

// q2_k.cc (vec_dot against Q8_K)
void DequantizeRowQ2_K(const void* src, float* dst, int64_t n);
void QuantizeRowQ2_K(const float* src, void* dst, int64_t n);
float VecDotQ2_KQ8_K(int64_t n, const void* w, const void* x);

// q3_k.cc (vec_dot against Q8_K)
void DequantizeRowQ3_K(const void* src, float* dst, int64_t n);
void QuantizeRowQ3_K(const float* src, void* dst, int64_t n);
float VecDotQ3_KQ8_K(int64_t n, const void* w, const void* x);

// q4_k.cc (vec_dot against Q8_K)
void DequantizeRowQ4_K(const void* src, float* dst, int64_t n);
void QuantizeRowQ4_K(const float* src, void* dst, int64_t n);
float VecDotQ4_KQ8_K(int64_t n, const void* w, const void* x);

// q5_k.cc (vec_dot against Q8_K)
void DequantizeRowQ5_K(const void* src, float* dst, int64_t n);
void QuantizeRowQ5_K(const float* src, void* dst, int64_t n);
float VecDotQ5_KQ8_K(int64_t n, const void* w, const void* x);

// q6_k.cc (vec_dot against Q8_K)
void DequantizeRowQ6_K(const void* src, float* dst, int64_t n);
void QuantizeRowQ6_K(const float* src, void* dst, int64_t n);
float VecDotQ6_KQ8_K(int64_t n, const void* w, const void* x);

// iq4_nl.cc (vec_dot against Q8_0)
void DequantizeRowIQ4_NL(const void* src, float* dst, int64_t n);
void QuantizeRowIQ4_NL(const float* src, void* dst, int64_t n);
float VecDotIQ4_NLQ8_0(int64_t n, const void* w, const void* x);

// iq4_xs.cc (vec_dot against Q8_K)
void DequantizeRowIQ4_XS(const void* src, float* dst, int64_t n);
void QuantizeRowIQ4_XS(const float* src, void* dst, int64_t n);
float VecDotIQ4_XSQ8_K(int64_t n, const void* w, const void* x);

// iq3_s.cc, iq3_xxs.cc, iq2_xs.cc (vec_dot against Q8_K)
void DequantizeRowIQ3_S(const void* src, float* dst, int64_t n);
void QuantizeRowIQ3_S(const float* src, void* dst, int64_t n);
float VecDotIQ3_SQ8_K(int64_t n, const void* w, const void* x);
void DequantizeRowIQ3_XXS(const void* src, float* dst, int64_t n);
void QuantizeRowIQ3_XXS(const float* src, void* dst, int64_t n);
float VecDotIQ3_XXSQ8_K(int64_t n, const void* w, const void* x);
void DequantizeRowIQ2_XS(const void* src, float* dst, int64_t n);
void QuantizeRowIQ2_XS(const float* src, void* dst, int64_t n);
float VecDotIQ2_XSQ8_K(int64_t n, const void* w, const void* x);

// q8_k.cc (activations only)
void DequantizeRowQ8_K(const void* src, float* dst, int64_t n);
void QuantizeRowQ8_K(const float* src, void* dst, int64_t n);

}  // namespace kvmesh::kernels
