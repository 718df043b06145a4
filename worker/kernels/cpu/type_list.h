// The tensor types the CPU kernels compute with, one line per type. The record
// declarations (kernel_records.h) and every dispatch table (type_traits.cc,
// panel_gemm.cc, kv_row_kernels.cc) are generated from this list, so a type is
// in all of them or in none, and the order of the lines does not matter.
//
// How to add a type, say Q9_0 (TensorType::kQ9_0 in common/tensor_type.h):
//   1. Write types/q9_0.cc: the scalar references and the type's record
//      (reference_kernels.h declares the references that other code names),
//        constinit const TypeRecord<TensorType::kQ9_0> kQ9_0Scalar = {
//            .vec_dot_type = ..., .block_size = ..., ...};
//   2. Add its line below, with 0 in every other column.
// Each SIMD variant is then one more file, types/q9_0_<suffix>.cc, defining
// the record k<Name><Record> of its column (kQ9_0Avx2 in q9_0_avx2.cc), and a
// 1 in that column. CMake picks a file in types/ up by its name and compiles
// it with the target flags of its suffix (CMakeLists.txt). Not yet records:
// a weight type for the panel GEMM also needs its panel and planar layouts in
// panel_layout.cc, whose switches over types predate this list.
//
// Columns: Name is the TensorType enumerator without its k; each other column
// is 1 where the type has that record (kernel_records.h says what each holds):
//   avx2        k<Name>Avx2            types/<type>_avx2.cc
//   avx512      k<Name>Avx512          types/<type>_avx512.cc
//   avx512bf16  k<Name>Avx512Bf16      types/<type>_avx512bf16.cc
//   amx         k<Name>Amx             types/<type>_amx.cc
//   kv          the type can hold KV rows; its scalar row kernels are made from
//               its references (kv_row_kernels.cc), no file of its own
//   kv_avx2     k<Name>KvAvx2          types/<type>_kv_avx2.cc
//   kv_avx512   k<Name>KvAvx512        types/<type>_kv_avx512.cc
//   kv_blocks   k<Name>KvBlocksAvx512  types/<type>_kv_blocks_avx512.cc
//   kv_blocks_avx2  k<Name>KvBlocksAvx2  types/<type>_kv_blocks_avx2.cc
#pragma once

// clang-format off
#define KVMESH_CPU_TYPE_LIST(X)                                                          \
  /* Name   avx2 avx512 avx512bf16 amx kv kv_avx2 kv_avx512 kv_blocks kv_blocks_avx2 */  \
  X(F32,   1,   1,     0,         0,  1, 1,      1,        1,        1)                  \
  X(F16,   1,   1,     0,         0,  1, 1,      1,        1,        1)                  \
  X(BF16,  1,   1,     1,         0,  1, 1,      1,        1,        1)                  \
  X(Q4_0,  1,   1,     0,         1,  1, 1,      1,        1,        1)                  \
  X(Q3_NL, 0,   0,     0,         0,  1, 1,      1,        1,        1)                  \
  X(Q4_1,  1,   1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(Q5_0,  1,   1,     0,         1,  0, 0,      0,        0,        0)                  \
  X(Q5_1,  1,   1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(Q8_0,  1,   1,     0,         1,  1, 1,      1,        1,        1)                  \
  X(Q8_1,  1,   1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(Q4_K,  1,   1,     0,         1,  0, 0,      0,        0,        0)                  \
  X(Q5_K,  1,   1,     0,         1,  0, 0,      0,        0,        0)                  \
  X(Q6_K,  1,   1,     0,         1,  0, 0,      0,        0,        0)                  \
  X(Q8_K,  1,   1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(Q2_K,  1,   1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(Q3_K,  1,   1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(IQ4_NL, 1,  1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(IQ4_XS, 1,  1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(IQ3_S,  1,  1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(IQ3_XXS, 1, 1,     0,         0,  0, 0,      0,        0,        0)                  \
  X(IQ2_XS, 1,  1,     0,         0,  0, 0,      0,        0,        0)
// clang-format on

// KVMESH_IF_##column(code...) keeps `code` where the column is 1.
#define KVMESH_IF_0(...)
#define KVMESH_IF_1(...) __VA_ARGS__
