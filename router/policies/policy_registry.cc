#include "router/policies/policy.h"

namespace kvmesh::router {

std::vector<std::string> PolicyNames() {
  return {"prefix", "least_load", "round_robin", "approx_prefix"};
}

StatusOr<std::unique_ptr<Policy>> MakePolicy(std::string_view name,
                                             const PrefixPolicyWeights& weights,
                                             const ApproxPrefixPolicyOptions& approx) {
  if (name == "prefix") return MakePrefixPolicy(weights);
  if (name == "approx_prefix") return MakeApproxPrefixPolicy(approx);
  if (name == "least_load") return MakeLeastLoadPolicy();
  if (name == "round_robin") return MakeRoundRobinPolicy();
  return InvalidArgumentError("unknown routing policy \"" + std::string(name) +
                              "\" (choose prefix, least_load, round_robin or approx_prefix)");
}

}  // namespace kvmesh::router
