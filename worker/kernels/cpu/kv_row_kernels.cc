#include "worker/kernels/cpu/kv_row_kernels.h"

#include <algorithm>

#include "common/check.h"
#include "worker/kernels/cpu/kernel_records.h"
#include "worker/kernels/cpu/type_list.h"

namespace kvmesh {
namespace {

using kernels::Isa;
using kernels::kMaxTypeId;
using kernels::KvBlockRecord;
using kernels::KvRowRecord;
using kernels::SlotOf;
using kernels::TypeRecord;

constexpr int kNumIsas = 3;

// Values accumulate through a stack buffer this long: a whole number of
// blocks of every KV type (checked when the table is built).
constexpr int64_t kSlice = 256;

// The reference accumulate: the type's reference to_float, then a float
// axpy, a slice at a time.
template <const auto& kRecord>
void AccumulateReference(int64_t n, const void* row, float weight, float* out) {
  float buffer[kSlice];
  const uint8_t* bytes = static_cast<const uint8_t*>(row);
  for (int64_t start = 0; start < n; start += kSlice) {
    const int64_t len = std::min(kSlice, n - start);
    kRecord.to_float(bytes + start / kRecord.block_size * kRecord.bytes_per_block, buffer, len);
    for (int64_t i = 0; i < len; ++i) out[start + i] += weight * buffer[i];
  }
}

// Every ISA's kernels, indexed by type id, built once from the records of
// type_list.h. An ISA without its own kernels for a type keeps the next
// narrower ISA's; block kernels are only where a record has them.
class KvTable {
 public:
  KvTable() {
// clang-format off
#define KVMESH_ADD_REFERENCE(Name, avx2, avx512, avx512bf16, amx, kv, ...)                 \
  KVMESH_IF_##kv(AddReference<kernels::k##Name##Scalar>(                                   \
                     SlotOf<TensorType::k##Name>(kernels::k##Name##Scalar));)
    // clang-format on
    KVMESH_CPU_TYPE_LIST(KVMESH_ADD_REFERENCE)
#undef KVMESH_ADD_REFERENCE
#ifdef KVMESH_X86_SIMD
// clang-format off
#define KVMESH_ADD_SIMD(Name, avx2, avx512, avx512bf16, amx, kv, kv_avx2, kv_avx512, kv_blocks, \
                        kv_blocks_avx2)                                                        \
  KVMESH_IF_##kv_avx2(Add(SlotOf<TensorType::k##Name>(kernels::k##Name##KvAvx2),                \
                          kernels::k##Name##KvAvx2);)                                           \
  KVMESH_IF_##kv_avx512(Add(SlotOf<TensorType::k##Name>(kernels::k##Name##KvAvx512),            \
                            kernels::k##Name##KvAvx512);)                                       \
  KVMESH_IF_##kv_blocks(Add(SlotOf<TensorType::k##Name>(kernels::k##Name##KvBlocksAvx512),      \
                            kernels::k##Name##KvBlocksAvx512);)                                 \
  KVMESH_IF_##kv_blocks_avx2(Add(SlotOf<TensorType::k##Name>(kernels::k##Name##KvBlocksAvx2),    \
                                 kernels::k##Name##KvBlocksAvx2);)
    // clang-format on
    KVMESH_CPU_TYPE_LIST(KVMESH_ADD_SIMD)
#undef KVMESH_ADD_SIMD
#endif
  }

  const KvRowKernels* Rows(int id, Isa isa) const {
    const KvRowKernels& k = rows_[static_cast<int>(isa)][id];
    return k.dot != nullptr ? &k : nullptr;
  }

  const KvBlockKernels* Blocks(int id, Isa isa) const {
    const KvBlockKernels& k = blocks_[static_cast<int>(isa)][id];
    return k.scores != nullptr ? &k : nullptr;
  }

 private:
  // The scalar kernels, the reference vec_dot and AccumulateReference, in
  // every ISA's table.
  template <const auto& kRecord>
  void AddReference(int slot) {
    KVMESH_CHECK(kSlice % kRecord.block_size == 0);
    for (KvRowKernels* isa : rows_) {
      isa[slot] = {kRecord.vec_dot, AccumulateReference<kRecord>, Isa::kScalar};
    }
  }

  template <TensorType kType, Isa kIsa>
  void Add(int slot, const KvRowRecord<kType, kIsa>& record) {
    for (int isa = static_cast<int>(kIsa); isa < kNumIsas; ++isa) {
      rows_[isa][slot] = {record.dot, record.accumulate, kIsa};
    }
  }

  template <TensorType kType, Isa kIsa>
  void Add(int slot, const KvBlockRecord<kType, kIsa>& record) {
    blocks_[static_cast<int>(kIsa)][slot] = {record.scores, record.weighted_sum};
  }

  KvRowKernels rows_[kNumIsas][kMaxTypeId] = {};
  KvBlockKernels blocks_[kNumIsas][kMaxTypeId] = {};
};

const KvTable& GetTable() {
  static const KvTable table;
  return table;
}

}  // namespace

const KvBlockKernels* GetKvBlockKernels(TensorType type, kernels::Isa isa) {
  const int id = static_cast<int>(type);
  if (id < 0 || id >= kMaxTypeId) return nullptr;
  return GetTable().Blocks(id, isa);
}

const KvRowKernels* GetKvRowKernels(TensorType type, kernels::Isa isa) {
  const int id = static_cast<int>(type);
  if (id < 0 || id >= kMaxTypeId) return nullptr;
  return GetTable().Rows(id, isa);
}

}  // namespace kvmesh
