// Declarations of the x86 KV row kernels (see kv_row_kernels.h). Each is
// defined in kv_rows_<type>_<isa>.cc and may only be called when the CPU has
// that ISA. Internal to the CPU runtime and its tests.
#pragma once

#include <cstdint>

namespace kvmesh::kv_rows {

// AVX2 + FMA + F16C.
namespace avx2 {
float DotF32(int64_t n, const void* k, const void* q);
void AccumulateF32(int64_t n, const void* v, float weight, float* out);
float DotF16(int64_t n, const void* k, const void* q);
void AccumulateF16(int64_t n, const void* v, float weight, float* out);
float DotBf16(int64_t n, const void* k, const void* q);
void AccumulateBf16(int64_t n, const void* v, float weight, float* out);
float DotQ8_0(int64_t n, const void* k, const void* q);
void AccumulateQ8_0(int64_t n, const void* v, float weight, float* out);
float DotQ4_0(int64_t n, const void* k, const void* q);  // q is Q8_0
void AccumulateQ4_0(int64_t n, const void* v, float weight, float* out);
}  // namespace avx2

// AVX-512 F + BW + VL (and FMA, F16C).
namespace avx512 {
float DotF32(int64_t n, const void* k, const void* q);
void AccumulateF32(int64_t n, const void* v, float weight, float* out);
float DotF16(int64_t n, const void* k, const void* q);
void AccumulateF16(int64_t n, const void* v, float weight, float* out);
float DotBf16(int64_t n, const void* k, const void* q);
void AccumulateBf16(int64_t n, const void* v, float weight, float* out);
float DotQ8_0(int64_t n, const void* k, const void* q);
void AccumulateQ8_0(int64_t n, const void* v, float weight, float* out);
float DotQ4_0(int64_t n, const void* k, const void* q);  // q is Q8_0
void AccumulateQ4_0(int64_t n, const void* v, float weight, float* out);
}  // namespace avx512

}  // namespace kvmesh::kv_rows
