// approx_prefix: routes by the prefixes this router has sent each worker,
// with no KV events - an approximate router in the manner of SGLang's
// cache_aware, kept as the baseline that exact prefix routing is measured
// against (bench/kv_pressure.sh), not as a default.
//
// The policy remembers, per worker, the prompts it routed there, as a trie
// whose nodes are the prompts' chained block hashes (so the cache salt and
// the model separate prompts as they do on the workers). It never learns
// what a worker evicted, failed to compute or got from another router: it
// presumes that what it sent is cached, forgetting a worker's least recently
// routed blocks past max_tokens_per_worker, and a worker's whole memory once
// it has not been a candidate for 65536 decisions (it left). A request that
// fails on its worker and is retried elsewhere stays recorded on the first:
// the policy is not told.
//
// Per request:
//   1. Load imbalance: if the busiest candidate carries more than
//      balance_abs_threshold requests over the least busy one and more than
//      balance_rel_threshold times as many, the least busy one takes it
//      ("load_imbalance").
//   2. Otherwise the candidate with the longest remembered prefix takes it if
//      that prefix covers at least match_threshold of the prompt
//      ("approx_hit"; ties go to the less loaded, then the lower slot).
//   3. Otherwise the candidate with the fewest remembered tokens (the most
//      cache room, as far as the router knows) takes it ("approx_miss").
// The chosen worker's trie then records the prompt's blocks.
#include <algorithm>
#include <list>
#include <mutex>

#include "absl/container/flat_hash_map.h"
#include "router/policies/policy.h"

namespace kvmesh::router {
namespace {

class ApproxPrefixPolicy final : public Policy {
 public:
  explicit ApproxPrefixPolicy(const ApproxPrefixPolicyOptions& options) : options_(options) {}

  std::string_view name() const override { return "approx_prefix"; }

  Decision Choose(const RoutingInput& input) override {
    std::lock_guard<std::mutex> lock(mu_);
    const int n = static_cast<int>(input.workers.size());
    ForgetDeparted(input.workers);
    int least = 0, most = 0;
    for (int i = 1; i < n; ++i) {
      if (input.workers[i].load() < input.workers[least].load()) least = i;
      if (input.workers[i].load() > input.workers[most].load()) most = i;
    }
    const int32_t low = input.workers[least].load();
    const int32_t high = input.workers[most].load();
    Decision d;
    if (high - low > options_.balance_abs_threshold &&
        high > options_.balance_rel_threshold * low) {
      d = {least, "load_imbalance"};
    } else {
      int best = -1;
      int64_t best_tokens = 0;
      for (int i = 0; i < n; ++i) {
        const int64_t tokens =
            static_cast<int64_t>(Matched(input.workers[i].id, input.block_hashes)) *
            input.block_size;
        if (tokens > best_tokens || (tokens == best_tokens && best >= 0 && tokens > 0 &&
                                     input.workers[i].load() < input.workers[best].load())) {
          best = i;
          best_tokens = tokens;
        }
      }
      if (best >= 0 && input.prompt_tokens > 0 &&
          static_cast<double>(best_tokens) >= options_.match_threshold * input.prompt_tokens) {
        d = {best, "approx_hit"};
      } else {
        int roomiest = 0;
        for (int i = 1; i < n; ++i) {
          const int64_t a = Remembered(input.workers[i].id);
          const int64_t b = Remembered(input.workers[roomiest].id);
          if (a < b || (a == b && input.workers[i].load() < input.workers[roomiest].load())) {
            roomiest = i;
          }
        }
        d = {roomiest, "approx_miss"};
      }
    }
    Record(input.workers[d.index].id, input.block_hashes, input.block_size);
    return d;
  }

 private:
  // What the policy remembers of one worker: its blocks, most recently routed
  // first, and where each sits in that order.
  struct Worker {
    uint64_t last_seen = 0;  // the decision that last had it as a candidate
    std::list<BlockHash> order;
    absl::flat_hash_map<BlockHash, std::list<BlockHash>::iterator, BlockHashHasher> blocks;
  };

  // Workers that have not been a candidate for kForgetAfter decisions have
  // left (or stopped serving these prompts): their memory goes, so that a
  // cluster whose workers come and go does not keep every departed one's.
  void ForgetDeparted(std::span<const WorkerView> candidates) {
    ++decisions_;
    for (const WorkerView& v : candidates) {
      const auto it = workers_.find(Key(v.id));
      if (it != workers_.end()) it->second.last_seen = decisions_;
    }
    if (decisions_ % 4096 != 0) return;
    absl::erase_if(workers_, [&](const auto& entry) {
      return entry.second.last_seen + kForgetAfter < decisions_;
    });
  }

  // Leading blocks of `hashes` remembered for `id`.
  int Matched(std::string_view id, std::span<const BlockHash> hashes) const {
    const auto it = workers_.find(Key(id));
    if (it == workers_.end()) return 0;
    int matched = 0;
    while (matched < static_cast<int>(hashes.size()) &&
           it->second.blocks.contains(hashes[matched])) {
      ++matched;
    }
    return matched;
  }

  int64_t Remembered(std::string_view id) const {
    const auto it = workers_.find(Key(id));
    return it == workers_.end() ? 0 : static_cast<int64_t>(it->second.blocks.size());
  }

  // Marks every block as just routed to `id` (the first block most recent,
  // so a prefix outlives its extensions), then forgets the least recent blocks
  // past the bound. A block is forgotten with everything after it in a
  // prompt, never before, because the prompt's blocks are touched in order.
  void Record(std::string_view id, std::span<const BlockHash> hashes, int32_t block_size) {
    Worker& w = workers_[std::string(id)];
    w.last_seen = decisions_;
    for (auto h = hashes.rbegin(); h != hashes.rend(); ++h) {
      const auto it = w.blocks.find(*h);
      if (it != w.blocks.end()) {
        w.order.splice(w.order.begin(), w.order, it->second);
      } else {
        w.order.push_front(*h);
        w.blocks.emplace(*h, w.order.begin());
      }
    }
    const int64_t max_blocks =
        std::max<int64_t>(1, options_.max_tokens_per_worker / std::max<int32_t>(block_size, 1));
    while (static_cast<int64_t>(w.blocks.size()) > max_blocks) {
      w.blocks.erase(w.order.back());
      w.order.pop_back();
    }
  }

  static constexpr uint64_t kForgetAfter = 1 << 16;

  const ApproxPrefixPolicyOptions options_;
  std::mutex mu_;
  uint64_t decisions_ = 0;  // guarded by mu_
  // Workers by id (slots are reused when workers leave; ids are not).
  // This absl's heterogeneous lookup takes its own string_view.
  static absl::string_view Key(std::string_view id) { return {id.data(), id.size()}; }
  absl::flat_hash_map<std::string, Worker> workers_;  // guarded by mu_
};

}  // namespace

std::unique_ptr<Policy> MakeApproxPrefixPolicy(const ApproxPrefixPolicyOptions& options) {
  return std::make_unique<ApproxPrefixPolicy>(options);
}

}  // namespace kvmesh::router
