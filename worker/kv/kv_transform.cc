#include "worker/kv/kv_transform.h"

#include <cmath>

#include "common/check.h"
#include "worker/kv/kv_bias.h"

namespace kvmesh {

bool IsPowerOfTwo(int n) { return n > 0 && (n & (n - 1)) == 0; }

void HadamardTransform(float* x, int n) {
  KVMESH_CHECK(IsPowerOfTwo(n));
  // Butterflies over strides 1, 2, 4, …: after the pass of stride h, each
  // aligned group of 2h values holds the unnormalised transform of its own
  // inputs. The order of the output is Sylvester's (H_2n = [H H; H -H]).
  for (int h = 1; h < n; h *= 2) {
    for (int i = 0; i < n; i += 2 * h) {
      for (int j = i; j < i + h; ++j) {
        const float a = x[j];
        const float b = x[j + h];
        x[j] = a + b;
        x[j + h] = a - b;
      }
    }
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (int i = 0; i < n; ++i) x[i] *= scale;
}

void TransformKey(const KvLayout& layout, int layer, int kv_head, float* k) {
  if (layout.k_bias != nullptr) {
    const float* mean = layout.k_bias->Row(layer, kv_head);
    for (int d = 0; d < layout.head_dim; ++d) k[d] -= mean[d];
  }
  if (layout.k_rotated) HadamardTransform(k, layout.head_dim);
}

void TransformQuery(const KvLayout& layout, float* q) {
  if (layout.k_rotated) HadamardTransform(q, layout.head_dim);
}

void TransformValue(const KvLayout& layout, float* v) {
  if (layout.v_rotated) HadamardTransform(v, layout.head_dim);
}

void RestoreAttentionOutput(const KvLayout& layout, float* out) {
  if (layout.v_rotated) HadamardTransform(out, layout.head_dim);
}

}  // namespace kvmesh
