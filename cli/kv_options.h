// The KV cache flags that `kvmesh run`, `kvmesh perplexity` and
// `kvmesh kv-calibrate` share, and how they become a KvLayout:
//
//   --kv-type TYPE      K and V storage: f32, f16 (default), bf16, q8_0, q4_0
//   --kv-type-k TYPE    overrides K's type
//   --kv-type-v TYPE    overrides V's type
//   --kv-bias FILE      center K with this `kvmesh kv-calibrate` table
//   --kv-rotate         Hadamard-rotate K and Q
//   --kv-rotate-v       Hadamard-rotate V (and each attention output back)
//   --kv-rounding R     q4_0 rounding: min-error (default) or reference
//   --block-size N      tokens per KV block (default 16)
//   --kv-memory BUDGET  (run) size the cache from a memory budget
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "common/status.h"
#include "worker/kv/kv_layout.h"
#include "worker/model/model.h"

namespace kvmesh::cli {

struct KvCliOptions {
  std::string type = "f16";
  std::string type_k;
  std::string type_v;
  std::string bias_path;
  bool rotate = false;
  bool rotate_v = false;
  std::string rounding = "min-error";
  int block_size = kDefaultBlockSize;
  std::string memory;
};

// Adds the flags above to `app`; `with_transforms` adds --kv-bias,
// --kv-rotate and --kv-rotate-v, `with_memory` adds --kv-memory.
void AddKvOptions(CLI::App* app, KvCliOptions* options, bool with_transforms, bool with_memory);

// The layout the flags describe for `model`, validated; a bias file must
// have been measured on this model.
StatusOr<KvLayout> BuildKvLayout(const KvCliOptions& options, const Model& model);

}  // namespace kvmesh::cli
