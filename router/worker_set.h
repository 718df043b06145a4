// WorkerSet: a fixed-size set of worker slots (0..kMaxWorkersPerModel-1) as a
// bitmask: the candidates of a routing decision and the holders of a block in
// the prefix index's Match().
#pragma once

#include <array>
#include <bit>
#include <cstdint>

namespace kvmesh::router {

inline constexpr int kMaxWorkersPerModel = 1024;

class WorkerSet {
 public:
  static constexpr int kWords = kMaxWorkersPerModel / 64;
  // Slots 64*i .. 64*i+63, one bit each.
  uint64_t word(int i) const { return words_[i]; }
  void Add(int slot) { words_[slot >> 6] |= 1ull << (slot & 63); }
  void Remove(int slot) { words_[slot >> 6] &= ~(1ull << (slot & 63)); }
  bool Contains(int slot) const { return (words_[slot >> 6] >> (slot & 63)) & 1; }
  bool empty() const {
    uint64_t any = 0;
    for (uint64_t w : words_) any |= w;
    return any == 0;
  }
  int size() const {
    int n = 0;
    for (uint64_t w : words_) n += std::popcount(w);
    return n;
  }
  WorkerSet operator&(const WorkerSet& o) const {
    WorkerSet r;
    for (int i = 0; i < kWords; ++i) r.words_[i] = words_[i] & o.words_[i];
    return r;
  }
  WorkerSet operator|(const WorkerSet& o) const {
    WorkerSet r;
    for (int i = 0; i < kWords; ++i) r.words_[i] = words_[i] | o.words_[i];
    return r;
  }
  WorkerSet operator-(const WorkerSet& o) const {
    WorkerSet r;
    for (int i = 0; i < kWords; ++i) r.words_[i] = words_[i] & ~o.words_[i];
    return r;
  }
  bool operator==(const WorkerSet&) const = default;

  // Calls fn(slot) for each member, in increasing order.
  template <typename Fn>
  void ForEach(Fn fn) const {
    for (int w = 0; w < kWords; ++w) {
      uint64_t bits = words_[w];
      while (bits) {
        fn(w * 64 + std::countr_zero(bits));
        bits &= bits - 1;
      }
    }
  }

 private:
  std::array<uint64_t, kWords> words_{};
};

}  // namespace kvmesh::router
