// LocalCommunicator: the Communicator of devices that share one address space
// (CPU devices of one worker, each driven by its own thread).
//
// Create(n) returns one object per rank over shared state. A collective
// publishes each rank's buffer, meets at a barrier, lets rank r combine the
// r-th slice of every buffer (so the work is spread over the ranks and no
// copy is staged), and meets again. Waiting spins for a short while and then
// sleeps on a futex, as ThreadPool does: a decode step makes two all-reduces
// per layer, each a few microseconds of work.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "worker/runtime/communicator.h"

namespace kvmesh {

class LocalCommunicator : public Communicator {
 public:
  // One communicator per rank; all must be used, each by its own thread.
  static std::vector<std::unique_ptr<Communicator>> Create(int num_ranks);

  int rank() const override { return rank_; }
  int size() const override { return static_cast<int>(shared_->buffers.size()); }
  Status AllReduceSum(float* data, int64_t n) override;
  Status Broadcast(float* data, int64_t n, int root) override;
  Status Barrier() override;

 private:
  struct Shared {
    explicit Shared(int n) : buffers(n), sizes(n) {}
    std::vector<float*> buffers;  // written by each rank before the first barrier
    std::vector<int64_t> sizes;
    std::atomic<int> arrived{0};
    std::atomic<uint32_t> generation{0};
  };

  LocalCommunicator(std::shared_ptr<Shared> shared, int rank)
      : shared_(std::move(shared)), rank_(rank) {}
  Status Publish(float* data, int64_t n);

  std::shared_ptr<Shared> shared_;
  int rank_;
};

}  // namespace kvmesh
