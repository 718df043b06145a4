// DeviceThread: the thread that drives one device of a multi-device plan.
//
// The executor posts one job at a time (a step's share of the graph) and
// waits for it; the devices of a tensor split run their jobs at once and meet
// in their Communicator's collectives. The device waits for a job by spinning
// briefly and then sleeping on a futex, since a decode step posts one every
// few hundred microseconds; the poster sleeps at once while it waits. Owned by the executor; the
// destructor stops and joins.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <vector>

#include "common/status.h"

namespace kvmesh {

class DeviceThread {
 public:
  // The thread keeps to `cores` when given; Start() reports whether pinning
  // worked.
  explicit DeviceThread(std::vector<int> cores);
  ~DeviceThread();
  DeviceThread(const DeviceThread&) = delete;
  DeviceThread& operator=(const DeviceThread&) = delete;

  // Starts the thread; fails if it cannot be pinned to its cores.
  Status Start();

  // Runs `job` on the thread. The previous job must have been waited for.
  void Post(std::function<void()> job);
  // Returns once the posted job has finished.
  void Wait();

 private:
  void Loop();

  std::vector<int> cores_;
  std::thread thread_;
  std::function<void()> job_;
  std::atomic<uint32_t> posted_{0};    // jobs posted
  std::atomic<uint32_t> finished_{0};  // jobs finished
  std::atomic<bool> stop_{false};
};

}  // namespace kvmesh
