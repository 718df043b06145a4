// The device flags that `kvmesh run`, `kvmesh bench` and `kvmesh perplexity`
// share with kvmesh-worker (worker/runtime/parallel_plan.h):
//
//   --devices LIST        cpu:0 (default), cpu:0,cpu:1, cpu:0@0-7,cpu:1@8-15
//   --split layer|tensor  how several devices share the model (default layer)
//   --layer-split N,M     layers per device (layer split; default balanced)
//   -t, --threads N       threads per unpinned CPU device (default: the
//                         cores, divided among the devices)
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>

#include "common/status.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"
#include "worker/runtime/parallel_plan.h"

namespace kvmesh::cli {

struct DeviceCliOptions {
  std::string devices;
  std::string split = "layer";
  std::string layer_split;
  int threads = 0;
};

void AddDeviceOptions(CLI::App* app, DeviceCliOptions* options);

// The plan the flags describe for `model`.
StatusOr<ParallelPlan> BuildPlan(const DeviceCliOptions& options, const Model& model);

}  // namespace kvmesh::cli
