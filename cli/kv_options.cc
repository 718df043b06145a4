#include "cli/kv_options.h"

#include "worker/kv/kv_bias.h"

namespace kvmesh::cli {
namespace {

StatusOr<TensorType> ParseKvType(const std::string& flag, const std::string& text) {
  std::optional<TensorType> type = ParseTensorType(text);
  if (!type || !IsKvStorageType(*type)) {
    std::string message = flag + " " + text;
    message += ": not a KV cache type; use f32, f16, bf16, q8_0 or q4_0";
    return InvalidArgumentError(std::move(message));
  }
  return *type;
}

}  // namespace

void AddKvOptions(CLI::App* app, KvCliOptions* o, bool with_transforms, bool with_memory) {
  app->add_option("--kv-type", o->type, "KV cache type for K and V: f32, f16, bf16, q8_0, q4_0")
      ->capture_default_str();
  app->add_option("--kv-type-k", o->type_k, "K cache type (overrides --kv-type for K)");
  app->add_option("--kv-type-v", o->type_v, "V cache type (overrides --kv-type for V)");
  app->add_option("--block-size", o->block_size, "Tokens per KV block")
      ->capture_default_str()
      ->check(CLI::Range(1, 1024));
  if (with_transforms) {
    app->add_option("--kv-bias", o->bias_path,
                    "Center K with this per-channel mean table (from `kvmesh kv-calibrate`)");
    app->add_flag("--kv-rotate", o->rotate,
                  "Multiply K and Q by a Hadamard matrix before K is stored (power-of-two heads)");
    app->add_option("--kv-rounding", o->rounding,
                    "How q4_0 pages are rounded: min-error (least squared error per block) or "
                    "reference (ggml's)")
        ->capture_default_str()
        ->check(CLI::IsMember({"min-error", "reference"}));
    app->add_flag("--kv-rotate-v", o->rotate_v,
                  "Multiply V by a Hadamard matrix before it is stored, and each attention output "
                  "by it again");
  }
  if (with_memory) {
    app->add_option("--kv-memory", o->memory,
                    "KV cache budget: a size (512MiB, 2G) or a fraction of the memory left after "
                    "the weights (0.5, 50%); default: one context's worth");
  }
}

StatusOr<KvLayout> BuildKvLayout(const KvCliOptions& o, const Model& model) {
  const ModelConfig& c = model.config();
  KvLayout layout;
  layout.n_layer = c.n_layer;
  layout.n_head_kv = c.n_head_kv;
  layout.head_dim = c.head_dim;
  layout.block_size = o.block_size;
  ASSIGN_OR_RETURN(const TensorType both, ParseKvType("--kv-type", o.type));
  layout.k_type = both;
  layout.v_type = both;
  if (!o.type_k.empty()) {
    ASSIGN_OR_RETURN(layout.k_type, ParseKvType("--kv-type-k", o.type_k));
  }
  if (!o.type_v.empty()) {
    ASSIGN_OR_RETURN(layout.v_type, ParseKvType("--kv-type-v", o.type_v));
  }
  if (c.head_dim_v != c.head_dim) {
    return UnimplementedError(
        "model '" + c.name + "' has K heads of " + std::to_string(c.head_dim) + " and V heads of " +
        std::to_string(c.head_dim_v) + " values; the KV cache needs them equal");
  }
  if (!o.bias_path.empty()) {
    ASSIGN_OR_RETURN(layout.k_bias, KvBias::Load(o.bias_path));
    Status matches =
        layout.k_bias->CheckModel(model.identity(), c.name, c.n_layer, c.n_head_kv, c.head_dim);
    if (!matches.ok()) return matches.WithPrefix(o.bias_path);
  }
  layout.k_rotated = o.rotate;
  layout.v_rotated = o.rotate_v;
  layout.rounding = o.rounding == "reference" ? KvRounding::kReference : KvRounding::kMinError;
  RETURN_IF_ERROR(layout.Validate());
  return layout;
}

}  // namespace kvmesh::cli
