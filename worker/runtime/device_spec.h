// DeviceSpec: one device a worker computes on, as named on the command line.
//
//   cpu:N            a CPU device: a group of threads (--threads of them)
//   cpu:N@0-7        the same group pinned to cores 0..7 (one thread per core)
//   cpu:N@0,2,4-6    any list of cores and ranges
//   cuda:N           an NVIDIA GPU (needs a build with the CUDA executor)
//
// A list is comma-separated: "cpu:0@0-7,cpu:1@8-15". A comma followed by a
// digit continues the previous device's core list. Values; parsing is pure.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

namespace kvmesh {

enum class DeviceKind { kCpu, kCuda };

struct DeviceSpec {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;
  std::vector<int> cores;  // CPU devices only; empty: not pinned
  // CUDA only: >= 0 for a virtual device ("cuda:0.1") that shares GPU `index`
  // with the plan's other virtual devices on it.
  int virtual_index = -1;

  std::string Name() const;      // "cpu:0" or "cuda:0.1", without the cores
  std::string ToString() const;  // "cpu:0@0-3"
  bool operator==(const DeviceSpec&) const = default;
};

// Parses a device list. Errors name the entry and what is wrong (unknown
// kind, bad index, bad core range, a device or core named twice).
StatusOr<std::vector<DeviceSpec>> ParseDeviceList(std::string_view text);

// "0-3,6": the core list as written after '@'.
std::string FormatCoreList(const std::vector<int>& cores);

}  // namespace kvmesh
