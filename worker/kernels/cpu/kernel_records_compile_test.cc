// Compile-time guarantees of the kernel records (kernel_records.h). Not part
// of any binary: ctest compiles this file once per case (CMakeLists.txt) and
// expects case 0 to compile and every other case to fail with its own error.
#include "worker/kernels/cpu/kernel_records.h"

#ifndef KVMESH_CASE
#error "compile with -DKVMESH_CASE=<n>"
#endif

namespace kvmesh::kernels {
namespace {

void Gemm(const PanelGemmArgs&) {}
float VecDot(int64_t, const void*, const void*) { return 0.0f; }

}  // namespace

#if KVMESH_CASE == 0
// A well-formed record, in its own slot.
constinit const TierRecord<TensorType::kQ4_0, Tier::kAvx2> kQ4_0Avx2 = {
    .vec_dot = VecDot,
    .gemm = Gemm,
};
static_assert(SlotOf<TensorType::kQ4_0>(kQ4_0Avx2) == static_cast<int>(TensorType::kQ4_0));
#elif KVMESH_CASE == 1
// Two fields swapped: designators out of declaration order.
constinit const TierRecord<TensorType::kQ4_0, Tier::kAvx2> kQ4_0Avx2 = {
    .gemm = Gemm,
    .vec_dot = VecDot,
};
#elif KVMESH_CASE == 2
// Two values swapped: no two fields of a record take the same kind of function.
constinit const TierRecord<TensorType::kQ4_0, Tier::kAvx2> kQ4_0Avx2 = {
    .vec_dot = Gemm,
    .gemm = VecDot,
};
#elif KVMESH_CASE == 3
// Q5_0's record under Q4_0's name (type_list.h declares kQ4_0Avx2 as Q4_0's).
constinit const TierRecord<TensorType::kQ5_0, Tier::kAvx2> kQ4_0Avx2 = {
    .vec_dot = VecDot,
    .gemm = Gemm,
};
#elif KVMESH_CASE == 4
// Q4_0's record in the table slot of Q5_0.
int slot = SlotOf<TensorType::kQ5_0>(kQ4_0Avx2);
#endif

}  // namespace kvmesh::kernels
