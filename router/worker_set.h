// WorkerSet: a fixed-size set of worker slots (0..kMaxWorkersPerModel-1) as a
// bitmask, for the prefix index's per-hash membership.
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace kvmesh::router {

inline constexpr int kMaxWorkersPerModel = 128;

class WorkerSet {
 public:
  void Add(int slot) { words_[slot >> 6] |= 1ull << (slot & 63); }
  void Remove(int slot) { words_[slot >> 6] &= ~(1ull << (slot & 63)); }
  bool Contains(int slot) const { return (words_[slot >> 6] >> (slot & 63)) & 1; }
  bool empty() const { return (words_[0] | words_[1]) == 0; }
  int size() const { return std::popcount(words_[0]) + std::popcount(words_[1]); }
  WorkerSet operator&(const WorkerSet& o) const {
    WorkerSet r;
    r.words_ = {words_[0] & o.words_[0], words_[1] & o.words_[1]};
    return r;
  }
  WorkerSet operator|(const WorkerSet& o) const {
    WorkerSet r;
    r.words_ = {words_[0] | o.words_[0], words_[1] | o.words_[1]};
    return r;
  }
  WorkerSet operator-(const WorkerSet& o) const {
    WorkerSet r;
    r.words_ = {words_[0] & ~o.words_[0], words_[1] & ~o.words_[1]};
    return r;
  }
  bool operator==(const WorkerSet&) const = default;

  // Calls fn(slot) for each member, in increasing order.
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (int w = 0; w < 2; ++w) {
      uint64_t bits = words_[w];
      while (bits) {
        fn(w * 64 + std::countr_zero(bits));
        bits &= bits - 1;
      }
    }
  }

 private:
  std::array<uint64_t, 2> words_{};
};

}  // namespace kvmesh::router
