// The most prompt blocks a fleet's KV caches could have served, given how
// much they hold: an offline optimum over the traffic as it was sent, for
// bench/router_sessions. The fleet is taken as one cache of its whole
// capacity (any contents of separate worker caches fit in it, a block held
// twice counting once), and the optimum keeps, of the blocks it is offered,
// those used again soonest (Belady's rule: when full, drop the block whose
// next use is farthest, or decline the new one if its own is farther; a
// block offered again before its next use counts as never used, since it
// comes back for free), which serves the most block hits a cache of that
// size can (bench/capacity_bound_test.cc checks it against an exhaustive
// search). It is an upper bound for caches that take requests in the order
// they were sent: a block counts as a hit even where an earlier block of
// the prompt is missing, and running requests pin nothing. It assumes that
// order, though: a worker's cache-aware admission may start a later request
// first, and where queues are long and the cache tight, that can serve a
// hit this bound declined to pay room for. A fleet with a host tier has
// that much more room, to be counted in the capacity.
#pragma once

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace kvmesh::bench {

template <typename Key, typename Hasher>
class CapacityBound {
 public:
  explicit CapacityBound(int64_t capacity_blocks) : capacity_(capacity_blocks) {}

  // A request sent: all its prompt's full blocks in order, of which the
  // first `reusable` could be served from cache (a worker computes at least
  // the last prompt token); the rest it computes and a cache may keep.
  // Returns the request's index for Solve's answer.
  int64_t Request(std::vector<Key> blocks, size_t reusable) {
    events_.push_back({true, Intern(blocks), std::min(reusable, blocks.size())});
    return requests_++;
  }

  // Blocks a finished reply added to its sequence: a worker holds them
  // without a request having asked, so the cache may keep them for free.
  void Stored(const std::vector<Key>& blocks) { events_.push_back({false, Intern(blocks), 0}); }

  // Replays the events with the optimal rule: reusable blocks held, per
  // request, in the order Request numbered them.
  std::vector<int64_t> Solve() const {
    constexpr int64_t kNever = std::numeric_limits<int64_t>::max();
    // Each block's appearances: the events that offer it, and whether that
    // one could be served it (a use). A block's worth to hold is its next
    // appearance if that is a use; if it is offered again first, dropping
    // it costs nothing, since it comes back then.
    std::vector<std::vector<std::pair<int64_t, bool>>> seen(ids_.size());
    for (size_t e = 0; e < events_.size(); ++e) {
      const Event& ev = events_[e];
      for (size_t i = 0; i < ev.blocks.size(); ++i) {
        seen[ev.blocks[i]].push_back({static_cast<int64_t>(e), i < ev.reusable});
      }
    }
    std::vector<size_t> next(ids_.size(), 0);
    auto next_use = [&](int32_t b, int64_t now) {
      while (next[b] < seen[b].size() && seen[b][next[b]].first <= now) ++next[b];
      return next[b] < seen[b].size() && seen[b][next[b]].second ? seen[b][next[b]].first : kNever;
    };
    std::vector<int64_t> held_until(ids_.size(), -1);  // its key in `held`, -1: not held
    std::set<std::pair<int64_t, int32_t>> held;        // (next use, block)
    auto offer = [&](int32_t b, int64_t now) {
      const int64_t use = next_use(b, now);
      if (held_until[b] >= 0) {  // held: only its next use moves
        held.erase({held_until[b], b});
        held.insert({use, b});
        held_until[b] = use;
        return;
      }
      if (use == kNever || capacity_ <= 0) return;
      if (static_cast<int64_t>(held.size()) >= capacity_) {
        auto farthest = std::prev(held.end());
        if (farthest->first <= use) return;  // the new block is needed later than any held
        held_until[farthest->second] = -1;
        held.erase(farthest);
      }
      held.insert({use, b});
      held_until[b] = use;
    };
    std::vector<int64_t> hits;
    hits.reserve(requests_);
    for (size_t e = 0; e < events_.size(); ++e) {
      const Event& ev = events_[e];
      if (ev.request) {
        int64_t n = 0;
        for (size_t i = 0; i < ev.reusable; ++i) n += held_until[ev.blocks[i]] >= 0;
        hits.push_back(n);
      }
      // Held blocks first: their next uses move past this event before any
      // is weighed against a block on offer.
      for (int32_t b : ev.blocks) {
        if (held_until[b] >= 0) offer(b, static_cast<int64_t>(e));
      }
      for (int32_t b : ev.blocks) {
        if (held_until[b] < 0) offer(b, static_cast<int64_t>(e));
      }
    }
    return hits;
  }

 private:
  struct Event {
    bool request = false;
    std::vector<int32_t> blocks;
    size_t reusable = 0;
  };
  std::vector<int32_t> Intern(const std::vector<Key>& blocks) {
    std::vector<int32_t> out;
    out.reserve(blocks.size());
    for (const Key& k : blocks) {
      out.push_back(ids_.try_emplace(k, static_cast<int32_t>(ids_.size())).first->second);
    }
    return out;
  }

  const int64_t capacity_;
  absl::flat_hash_map<Key, int32_t, Hasher> ids_;
  std::vector<Event> events_;
  int64_t requests_ = 0;
};

}  // namespace kvmesh::bench
