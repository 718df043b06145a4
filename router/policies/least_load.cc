// least_load: the worker with the fewest requests on it (ties: fewest queued
// prefill tokens, then the lowest slot).
#include "router/policies/policy.h"

namespace kvmesh::router {
namespace {

class LeastLoadPolicy final : public Policy {
 public:
  std::string_view name() const override { return "least_load"; }
  Decision Choose(const RoutingInput& input) override {
    int best = 0;
    for (int i = 1; i < static_cast<int>(input.workers.size()); ++i) {
      const WorkerView& a = input.workers[i];
      const WorkerView& b = input.workers[best];
      if (a.load() < b.load() ||
          (a.load() == b.load() && a.queued_prefill_tokens < b.queued_prefill_tokens)) {
        best = i;
      }
    }
    return {best, "least_load"};
  }
};

}  // namespace

std::unique_ptr<Policy> MakeLeastLoadPolicy() { return std::make_unique<LeastLoadPolicy>(); }

}  // namespace kvmesh::router
