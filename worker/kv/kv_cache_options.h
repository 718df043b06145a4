// KvCacheOptions: how the KV cache is stored, as a user states it (flags of
// `kvmesh run/perplexity/bench`, options of kvmesh-worker), and how it
// becomes a validated KvLayout for a model.
//
//   type, type_k, type_v  f32, f16 (default), bf16, q8_0, q4_0, q3_nl (K and V, or
//                         each overridden)
//   bias_path             center K with a `kvmesh kv-calibrate` mean table
//   rotate_k, rotate_v    Hadamard rotation of K (with Q) and of V: kAuto
//                         (default) rotates quantized pages (q8_0, q4_0, q3_nl) when
//                         the head size is a power of two, since it lowers
//                         their error at the cost of one small transform per
//                         head; f16/bf16/f32 pages are not rotated
//   rounding              q4_0 pages: min-error (default) or reference
//   block_size            tokens per block (16)
#pragma once

#include <string>
#include <string_view>

#include "common/status.h"
#include "worker/kv/kv_layout.h"
#include "worker/model/model.h"

namespace kvmesh {

enum class KvRotation { kAuto, kOn, kOff };

struct KvCacheOptions {
  std::string type = "f16";
  std::string type_k;
  std::string type_v;
  std::string bias_path;
  KvRotation rotate_k = KvRotation::kAuto;
  KvRotation rotate_v = KvRotation::kAuto;
  std::string rounding = "min-error";
  int block_size = kDefaultBlockSize;
};

// "auto", "on", "off" (also true/false).
StatusOr<KvRotation> ParseKvRotation(std::string_view text);

// The layout the options describe for `model`, validated; a bias table must
// have been measured on this model. Errors name the option to change.
StatusOr<KvLayout> BuildKvLayout(const KvCacheOptions& options, const Model& model);

}  // namespace kvmesh
