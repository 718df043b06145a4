// round_robin: each request goes to the next worker in turn, ignoring load
// and cache. The baseline the other policies are measured against.
#include <atomic>

#include "router/policies/policy.h"

namespace kvmesh::router {
namespace {

class RoundRobinPolicy final : public Policy {
 public:
  std::string_view name() const override { return "round_robin"; }
  Decision Choose(const RoutingInput& input) override {
    const uint64_t n = next_.fetch_add(1, std::memory_order_relaxed);
    return {static_cast<int>(n % input.workers.size()), "round_robin"};
  }

 private:
  std::atomic<uint64_t> next_{0};
};

}  // namespace

std::unique_ptr<Policy> MakeRoundRobinPolicy() { return std::make_unique<RoundRobinPolicy>(); }

}  // namespace kvmesh::router
