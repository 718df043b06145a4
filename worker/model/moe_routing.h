// The router of a mixture-of-experts layer, for one token: from the logits
// of its experts, the experts it runs through and the weight of each.
//
// Softmax over every expert's logit, then the k most probable (ties go to
// the lower expert, in descending order of probability), their
// probabilities as weights, divided by their sum when `normalize` (Qwen3-MoE's
// norm_topk_prob; Mixtral's top-k-then-softmax is the same thing). As
// llama.cpp computes it, so a token picks the same experts there and here
// unless two of them are within rounding of each other.
#pragma once

#include <cstdint>
#include <span>

namespace kvmesh {

// `logits` (n_expert values) is overwritten with the probabilities;
// `chosen` and `weight` receive k entries (k <= n_expert).
void RouteToExperts(std::span<float> logits, int k, bool normalize, int32_t* chosen, float* weight);

}  // namespace kvmesh
