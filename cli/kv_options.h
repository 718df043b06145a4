// The KV cache flags that `kvmesh run`, `kvmesh perplexity`, `kvmesh bench`
// and `kvmesh kv-calibrate` share (see worker/kv/kv_cache_options.h):
//
//   --kv-type TYPE      K and V storage: f32, f16 (default), bf16, q8_0, q4_0, q3_nl
//   --kv-type-k TYPE    overrides K's type
//   --kv-type-v TYPE    overrides V's type
//   --kv-bias FILE      center K with this `kvmesh kv-calibrate` table
//   --kv-rotate         Hadamard-rotate K and Q (default for quantized K)
//   --kv-rotate-v       Hadamard-rotate V (default for quantized V)
//   --kv-no-rotate      rotate neither (plain q8_0/q4_0 pages); with it,
//                       --kv-rotate / --kv-rotate-v turn one back on
//   --kv-rounding R     q4_0 rounding: min-error (default) or reference
//   --block-size N      tokens per KV block (default 16)
//   --kv-memory BUDGET  (run) size the cache from a memory budget
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common/status.h"
#include "worker/kv/kv_cache_options.h"

namespace kvmesh::cli {

struct KvCliOptions {
  KvCacheOptions cache;
  bool rotate = false;
  bool rotate_v = false;
  bool no_rotate = false;
  std::string memory;
};

// Adds the flags above to `app`; `with_transforms` adds --kv-bias, the
// rotation flags and --kv-rounding, `with_memory` adds --kv-memory.
void AddKvOptions(CLI::App* app, KvCliOptions* options, bool with_transforms, bool with_memory);

// The layout the flags describe for `model`, validated.
StatusOr<KvLayout> BuildKvLayout(const KvCliOptions& options, const Model& model);

}  // namespace kvmesh::cli
