// CUDA device discovery for the CUDA backend. Compiled only when the build
// has CUDA (KVMESH_CUDA); callers use it to decide, at run time, whether a GPU
// is there at all (a CUDA build must still run on machines without one).
#pragma once

#include <string>

#include "common/status.h"

namespace kvmesh::cuda {

// Number of usable CUDA devices; an Unavailable status (with the driver's
// message) when there is no driver or no device.
StatusOr<int> DeviceCount();

// "NVIDIA H200 (sm_90, 139 GiB)" for device `index`.
StatusOr<std::string> DeviceDescription(int index);

}  // namespace kvmesh::cuda
