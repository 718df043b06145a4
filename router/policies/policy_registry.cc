#include "router/policies/policy.h"

namespace kvmesh::router {

std::vector<std::string> PolicyNames() { return {"prefix", "least_load", "round_robin"}; }

StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                             const PrefixPolicyWeights& weights) {
  if (name == "prefix") return MakePrefixPolicy(weights);
  if (name == "least_load") return MakeLeastLoadPolicy();
  if (name == "round_robin") return MakeRoundRobinPolicy();
  return InvalidArgumentError("unknown routing policy \"" + std::string(name) +
                              "\" (choose prefix, least_load or round_robin)");
}

}  // namespace kvmesh::router
