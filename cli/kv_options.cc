#include "cli/kv_options.h"

namespace kvmesh::cli {

void AddKvOptions(CLI::App* app, KvCliOptions* o, bool with_transforms, bool with_memory) {
  KvCacheOptions& c = o->cache;
  app->add_option("--kv-type", c.type,
                  "KV cache type for K and V: f32, f16, bf16, q8_0, q4_0, q3_nl")
      ->capture_default_str();
  app->add_option("--kv-type-k", c.type_k, "K cache type (overrides --kv-type for K)");
  app->add_option("--kv-type-v", c.type_v, "V cache type (overrides --kv-type for V)");
  app->add_option("--block-size", c.block_size, "Tokens per KV block")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  if (with_transforms) {
    app->add_option("--kv-bias", c.bias_path,
                    "Center K with this per-channel mean table (from `kvmesh kv-calibrate`)");
    app->add_flag("--kv-rotate", o->rotate,
                  "Multiply K and Q by a Hadamard matrix before K is stored (power-of-two heads; "
                  "the default for q8_0/q4_0/q3_nl K)");
    app->add_flag("--kv-rotate-v", o->rotate_v,
                  "Multiply V by a Hadamard matrix before it is stored, and each attention output "
                  "by it again (the default for q8_0/q4_0/q3_nl V)");
    app->add_flag("--kv-no-rotate", o->no_rotate,
                  "Rotate neither K nor V (plain quantized pages); --kv-rotate or --kv-rotate-v "
                  "then turn one back on");
    app->add_option("--kv-rounding", c.rounding,
                    "How q4_0 pages are rounded: min-error (least squared error per block) or "
                    "reference (ggml's)")
        ->capture_default_str()
        ->check(CLI::IsMember({"min-error", "reference"}));
  }
  if (with_memory) {
    app->add_option("--kv-memory", o->memory,
                    "KV cache budget: a size (512MiB, 2G) or a fraction of the memory left after "
                    "the weights (0.5, 50%); default: one context's worth");
  }
}

StatusOr<KvLayout> BuildKvLayout(const KvCliOptions& o, const Model& model) {
  KvCacheOptions c = o.cache;
  // --kv-no-rotate sets the base; --kv-rotate / --kv-rotate-v turn one back on.
  if (o.no_rotate) c.rotate_k = c.rotate_v = KvRotation::kOff;
  if (o.rotate) c.rotate_k = KvRotation::kOn;
  if (o.rotate_v) c.rotate_v = KvRotation::kOn;
  return BuildKvLayout(c, model);
}

}  // namespace kvmesh::cli
