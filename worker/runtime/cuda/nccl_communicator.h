// NcclCommunicator: the tensor split's collectives between GPUs of one
// process, through NCCL. Ranks sum GPU memory on their own stream
// (Communicator::on_device); host-memory calls are refused. NCCL takes one
// rank per GPU, so virtual devices on one GPU (cuda:0.0,cuda:0.1) meet
// through a LocalCommunicator instead (the CUDA executor stages the sums
// through pinned host memory).
#pragma once

#include <memory>
#include <vector>

#include "worker/runtime/communicator.h"

namespace kvmesh {

// One communicator per GPU of `devices` (distinct CUDA device indices), in
// rank order. Unavailable in builds without NCCL.
StatusOr<std::vector<std::unique_ptr<Communicator>>> CreateNcclCommunicators(
    const std::vector<int>& devices);

}  // namespace kvmesh
