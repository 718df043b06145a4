#include "worker/model/moe_routing.h"

#include <algorithm>
#include <cmath>

namespace kvmesh {

void RouteToExperts(std::span<float> logits, int k, bool normalize, int32_t* chosen,
                    float* weight) {
  const float max = *std::max_element(logits.begin(), logits.end());
  float sum = 0.0f;
  for (float& v : logits) {
    v = std::exp(v - max);
    sum += v;
  }
  for (float& v : logits) v /= sum;
  const int n = static_cast<int>(logits.size());
  for (int i = 0; i < k; ++i) {
    int best = -1;
    for (int e = 0; e < n; ++e) {
      if (std::find(chosen, chosen + i, e) != chosen + i) continue;
      if (best < 0 || logits[e] > logits[best]) best = e;
    }
    chosen[i] = best;
    weight[i] = logits[best];
  }
  if (normalize) {
    float total = 0.0f;
    for (int i = 0; i < k; ++i) total += weight[i];
    for (int i = 0; i < k; ++i) weight[i] /= total;
  }
}

}  // namespace kvmesh
