// Communicator: collectives between the devices of a tensor split.
//
// One Communicator object per rank (device); rank r's object is used only by
// the thread that drives device r. Every rank makes the same calls in the
// same order with the same sizes (the forward graph guarantees it), and a
// call returns once every rank has made it. Results are identical on every
// rank, so replicated state (the residual stream) stays identical across
// devices.
//
// Implementations: LocalCommunicator (worker/runtime/cpu/local_communicator.h,
// devices in one process sharing memory, also what virtual CUDA devices on
// one GPU meet through); NcclCommunicator (worker/runtime/cuda/) for GPUs.
#pragma once

#include <cstdint>

#include "common/status.h"

namespace kvmesh {

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;

  // data[0..n) ← the element-wise sum over every rank's data, added in rank
  // order (rank 0 first), so every rank gets the same bits.
  virtual Status AllReduceSum(float* data, int64_t n) = 0;
  // data[0..n) ← rank `root`'s data.
  virtual Status Broadcast(float* data, int64_t n, int root) = 0;
  virtual Status Barrier() = 0;

  // Communicators whose ranks hold their data in GPU memory (NCCL) sum it
  // there: `data` is a device pointer, `stream` the rank's cudaStream_t, and
  // the call only enqueues the collective. The others take host memory, and
  // a GPU backend stages through it.
  virtual bool on_device() const { return false; }
  virtual Status AllReduceSumOnDevice(float* /*data*/, int64_t /*n*/, void* /*stream*/) {
    return UnimplementedError("this communicator sums host memory only");
  }
};

}  // namespace kvmesh
