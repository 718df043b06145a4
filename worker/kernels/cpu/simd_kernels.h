// The SIMD kernels, one file per (type, tier): q4_0_avx2.cc, q4_0_avx512.cc,
// ... Each tier's functions live in its own namespace and may only be called
// when that tier is supported (cpu_features.h); type_traits.cc and
// panel_gemm.cc put them in the dispatch tables.
//
// Contracts are those of the reference functions of the same name
// (reference_kernels.h) and of PanelGemmFn (panel_gemm.h):
//  - quantizers (QuantizeRow*) write exactly the bytes the reference writes;
//  - VecDot* of the quantized types return exactly the reference's value;
//  - VecDot* of F32/F16/BF16 accumulate in float lanes (the reference sums in
//    double), so they agree to rounding;
//  - Gemm* follow panel_gemm.h.
#pragma once

#include <cstdint>

#include "worker/kernels/cpu/panel_gemm.h"

namespace kvmesh::kernels {

// Both tiers provide the same set (file per type: GemmQ4_0 and VecDotQ4_0Q8_0 in
// q4_0_<tier>.cc; the activation quantizers in q8_0/q8_1/q8_k_<tier>.cc).
namespace avx2 {

void GemmF32(const PanelGemmArgs& args);
void GemmF16(const PanelGemmArgs& args);
void GemmBf16(const PanelGemmArgs& args);
void GemmQ4_0(const PanelGemmArgs& args);
void GemmQ4_1(const PanelGemmArgs& args);
void GemmQ5_0(const PanelGemmArgs& args);
void GemmQ5_1(const PanelGemmArgs& args);
void GemmQ8_0(const PanelGemmArgs& args);
void GemmQ4_K(const PanelGemmArgs& args);
void GemmQ5_K(const PanelGemmArgs& args);
void GemmQ6_K(const PanelGemmArgs& args);
float VecDotF32(int64_t n, const void* w, const void* x);
float VecDotF16(int64_t n, const void* w, const void* x);
float VecDotBf16(int64_t n, const void* w, const void* x);
float VecDotQ4_0Q8_0(int64_t n, const void* w, const void* x);
float VecDotQ4_1Q8_1(int64_t n, const void* w, const void* x);
float VecDotQ5_0Q8_0(int64_t n, const void* w, const void* x);
float VecDotQ5_1Q8_1(int64_t n, const void* w, const void* x);
float VecDotQ8_0Q8_0(int64_t n, const void* w, const void* x);
float VecDotQ4_KQ8_K(int64_t n, const void* w, const void* x);
float VecDotQ5_KQ8_K(int64_t n, const void* w, const void* x);
float VecDotQ6_KQ8_K(int64_t n, const void* w, const void* x);
void QuantizeRowF16(const float* src, void* dst, int64_t n);
void QuantizeRowBf16(const float* src, void* dst, int64_t n);
void QuantizeRowQ8_0(const float* src, void* dst, int64_t n);
void QuantizeRowQ8_1(const float* src, void* dst, int64_t n);
void QuantizeRowQ8_K(const float* src, void* dst, int64_t n);
void DequantizeRowF16(const void* src, float* dst, int64_t n);
void DequantizeRowBf16(const void* src, float* dst, int64_t n);

}  // namespace avx2

namespace avx512 {

void GemmF32(const PanelGemmArgs& args);
void GemmF16(const PanelGemmArgs& args);
void GemmBf16(const PanelGemmArgs& args);
void GemmQ4_0(const PanelGemmArgs& args);
void GemmQ4_1(const PanelGemmArgs& args);
void GemmQ5_0(const PanelGemmArgs& args);
void GemmQ5_1(const PanelGemmArgs& args);
void GemmQ8_0(const PanelGemmArgs& args);
void GemmQ4_K(const PanelGemmArgs& args);
void GemmQ5_K(const PanelGemmArgs& args);
void GemmQ6_K(const PanelGemmArgs& args);
float VecDotF32(int64_t n, const void* w, const void* x);
float VecDotF16(int64_t n, const void* w, const void* x);
float VecDotBf16(int64_t n, const void* w, const void* x);
float VecDotQ4_0Q8_0(int64_t n, const void* w, const void* x);
float VecDotQ4_1Q8_1(int64_t n, const void* w, const void* x);
float VecDotQ5_0Q8_0(int64_t n, const void* w, const void* x);
float VecDotQ5_1Q8_1(int64_t n, const void* w, const void* x);
float VecDotQ8_0Q8_0(int64_t n, const void* w, const void* x);
float VecDotQ4_KQ8_K(int64_t n, const void* w, const void* x);
float VecDotQ5_KQ8_K(int64_t n, const void* w, const void* x);
float VecDotQ6_KQ8_K(int64_t n, const void* w, const void* x);
void QuantizeRowF16(const float* src, void* dst, int64_t n);
void QuantizeRowBf16(const float* src, void* dst, int64_t n);
void QuantizeRowQ8_0(const float* src, void* dst, int64_t n);
void QuantizeRowQ8_1(const float* src, void* dst, int64_t n);
void QuantizeRowQ8_K(const float* src, void* dst, int64_t n);
void DequantizeRowF16(const void* src, float* dst, int64_t n);
void DequantizeRowBf16(const void* src, float* dst, int64_t n);

// BF16 GEMM with the AVX512_BF16 dot-product instruction (bf16_avx512bf16.cc);
// only when HasAvx512Bf16().
void GemmBf16Native(const PanelGemmArgs& args);

}  // namespace avx512

// Kernels that also use the AMX tile unit (*_amx.cc): part of the
// AVX-512 tier, only when HasAmx(). Same results as the avx512 kernel of the
// same name, bit for bit; token counts below a tile go to that kernel.
namespace amx {

void GemmQ4_0(const PanelGemmArgs& args);
void GemmQ5_0(const PanelGemmArgs& args);
void GemmQ8_0(const PanelGemmArgs& args);
void GemmQ4_K(const PanelGemmArgs& args);
void GemmQ5_K(const PanelGemmArgs& args);
void GemmQ6_K(const PanelGemmArgs& args);

}  // namespace amx

}  // namespace kvmesh::kernels
