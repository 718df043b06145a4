#include "worker/runtime/cpu/local_communicator.h"

#include <cstring>
#include <string>

#include "common/spin_wait.h"

namespace kvmesh {

std::vector<std::unique_ptr<Communicator>> LocalCommunicator::Create(int num_ranks) {
  auto shared = std::make_shared<Shared>(num_ranks);
  std::vector<std::unique_ptr<Communicator>> ranks;
  for (int r = 0; r < num_ranks; ++r) {
    ranks.push_back(std::unique_ptr<Communicator>(new LocalCommunicator(shared, r)));
  }
  return ranks;
}

Status LocalCommunicator::Barrier() {
  Shared& s = *shared_;
  const int n = size();
  const uint32_t gen = s.generation.load(std::memory_order_acquire);
  if (s.arrived.fetch_add(1, std::memory_order_acq_rel) == n - 1) {
    s.arrived.store(0, std::memory_order_relaxed);
    s.generation.store(gen + 1, std::memory_order_release);
    s.generation.notify_all();
    return Status::Ok();
  }
  if (SpinUntil([&] { return s.generation.load(std::memory_order_acquire) != gen; })) {
    return Status::Ok();
  }
  while (s.generation.load(std::memory_order_acquire) == gen) s.generation.wait(gen);
  return Status::Ok();
}

Status LocalCommunicator::Publish(float* data, int64_t n) {
  shared_->buffers[rank_] = data;
  shared_->sizes[rank_] = n;
  RETURN_IF_ERROR(Barrier());
  for (int r = 0; r < size(); ++r) {
    if (shared_->sizes[r] != n) {
      return InternalError("collective sizes differ: rank " + std::to_string(rank_) + " has " +
                           std::to_string(n) + " values, rank " + std::to_string(r) + " has " +
                           std::to_string(shared_->sizes[r]));
    }
  }
  return Status::Ok();
}

Status LocalCommunicator::AllReduceSum(float* data, int64_t n) {
  const int ranks = size();
  if (ranks == 1) return Status::Ok();
  RETURN_IF_ERROR(Publish(data, n));
  // Rank r owns slice r of every buffer: it alone reads and writes it.
  const int64_t begin = n * rank_ / ranks;
  const int64_t end = n * (rank_ + 1) / ranks;
  float* const* buffers = shared_->buffers.data();
  for (int64_t i = begin; i < end; ++i) {
    float sum = buffers[0][i];
    for (int r = 1; r < ranks; ++r) sum += buffers[r][i];
    for (int r = 0; r < ranks; ++r) buffers[r][i] = sum;
  }
  return Barrier();
}

Status LocalCommunicator::Broadcast(float* data, int64_t n, int root) {
  if (root < 0 || root >= size()) {
    return InvalidArgumentError("broadcast root " + std::to_string(root) + " is outside 0.." +
                                std::to_string(size() - 1));
  }
  if (size() == 1) return Status::Ok();
  RETURN_IF_ERROR(Publish(data, n));
  if (rank_ != root) std::memcpy(data, shared_->buffers[root], n * sizeof(float));
  return Barrier();
}

}  // namespace kvmesh
