#include "worker/kv/kv_cache_options.h"

#include "worker/kv/kv_bias.h"

namespace kvmesh {
namespace {

StatusOr<TensorType> ParseKvType(const std::string& option, const std::string& text) {
  std::optional<TensorType> type = ParseTensorType(text);
  if (!type || !IsKvStorageType(*type)) {
    return InvalidArgumentError(option + " " + text +
                                ": not a KV cache type; use f32, f16, bf16, q8_0, q4_0 or q3_nl");
  }
  return *type;
}

bool Quantized(TensorType t) {
  return t == TensorType::kQ8_0 || t == TensorType::kQ4_0 || t == TensorType::kQ3_NL;
}

bool Rotate(KvRotation r, TensorType type, int head_dim) {
  if (r != KvRotation::kAuto) return r == KvRotation::kOn;
  return Quantized(type) && head_dim > 0 && (head_dim & (head_dim - 1)) == 0;
}

}  // namespace

StatusOr<KvRotation> ParseKvRotation(std::string_view text) {
  if (text == "auto") return KvRotation::kAuto;
  if (text == "on" || text == "true") return KvRotation::kOn;
  if (text == "off" || text == "false") return KvRotation::kOff;
  return InvalidArgumentError("\"" + std::string(text) + "\" is not auto, on or off");
}

StatusOr<KvLayout> BuildKvLayout(const KvCacheOptions& o, const Model& model) {
  const ModelConfig& c = model.config();
  if (c.head_dim_v != c.head_dim) {
    return UnimplementedError(
        "model '" + c.name + "' has K heads of " + std::to_string(c.head_dim) + " and V heads of " +
        std::to_string(c.head_dim_v) + " values; the KV cache needs them equal");
  }
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
  if (!o.bias_path.empty()) {
    ASSIGN_OR_RETURN(layout.k_bias, KvBias::Load(o.bias_path));
    Status matches =
        layout.k_bias->CheckModel(model.identity(), c.name, c.n_layer, c.n_head_kv, c.head_dim);
    if (!matches.ok()) return matches.WithPrefix(o.bias_path);
  }
  layout.k_rotated = Rotate(o.rotate_k, layout.k_type, c.head_dim);
  layout.v_rotated = Rotate(o.rotate_v, layout.v_type, c.head_dim);
  if (o.rounding == "reference") {
    layout.rounding = KvRounding::kReference;
  } else if (o.rounding == "min-error") {
    layout.rounding = KvRounding::kMinError;
  } else {
    return InvalidArgumentError("--kv-rounding " + o.rounding + ": use min-error or reference");
  }
  RETURN_IF_ERROR(layout.Validate());
  return layout;
}

}  // namespace kvmesh
