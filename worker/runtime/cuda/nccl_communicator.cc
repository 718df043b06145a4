#include "worker/runtime/cuda/nccl_communicator.h"

#include <string>

#if defined(KVMESH_HAS_NCCL)
#include <cuda_runtime.h>
#include <nccl.h>
#endif

namespace kvmesh {

#if defined(KVMESH_HAS_NCCL)
namespace {

Status NcclStatus(ncclResult_t r, const std::string& what) {
  if (r == ncclSuccess) return Status::Ok();
  return InternalError(what + ": " + ncclGetErrorString(r));
}

class NcclCommunicator : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  Status AllReduceSum(float*, int64_t) override {
    return UnimplementedError("NCCL sums GPU memory only (AllReduceSumOnDevice)");
  }
  Status Broadcast(float*, int64_t, int) override {
    return UnimplementedError("NCCL broadcast of host memory");
  }
  Status Barrier() override { return Status::Ok(); }
  bool on_device() const override { return true; }
  Status AllReduceSumOnDevice(float* data, int64_t n, void* stream) override {
    return NcclStatus(ncclAllReduce(data, data, static_cast<size_t>(n), ncclFloat, ncclSum, comm_,
                                    static_cast<cudaStream_t>(stream)),
                      "ncclAllReduce (rank " + std::to_string(rank_) + ")");
  }

 private:
  ncclComm_t comm_;
  int rank_, size_;
};

}  // namespace
#endif

StatusOr<std::vector<std::unique_ptr<Communicator>>> CreateNcclCommunicators(
    const std::vector<int>& devices) {
#if defined(KVMESH_HAS_NCCL)
  const int n = static_cast<int>(devices.size());
  std::vector<ncclComm_t> comms(n);
  RETURN_IF_ERROR(NcclStatus(ncclCommInitAll(comms.data(), n, devices.data()), "ncclCommInitAll"));
  std::vector<std::unique_ptr<Communicator>> out;
  for (int r = 0; r < n; ++r) out.push_back(std::make_unique<NcclCommunicator>(comms[r], r, n));
  return out;
#else
  (void)devices;
  return UnavailableError("this kvmesh build has no NCCL; GPUs of a tensor split need it");
#endif
}

}  // namespace kvmesh
