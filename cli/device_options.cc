#include "cli/device_options.h"

namespace kvmesh::cli {

void AddDeviceOptions(CLI::App* app, DeviceCliOptions* o) {
  app->add_option("--devices", o->devices,
                  "devices to split the model over: cpu:0 (default), cpu:0,cpu:1, "
                  "cpu:0@0-7,cpu:1@8-15 (pinned to cores), cuda:0, cuda:0,cuda:1, "
                  "cuda:0.0,cuda:0.1 (two virtual devices on GPU 0)");
  app->add_option("--split", o->split, "how several devices share the model: layer or tensor")
      ->capture_default_str();
  app->add_option("--layer-split", o->layer_split,
                  "layers per device for --split layer, e.g. 10,6 (default: balanced by bytes)");
  app->add_option("-t,--threads", o->threads,
                  "threads per CPU device (default: all cores, divided among the devices)");
}

StatusOr<ParallelPlan> BuildPlan(const DeviceCliOptions& o, const Model& model) {
  ASSIGN_OR_RETURN(PlanOptions options,
                   PlanOptions::Parse(o.devices, o.split, o.layer_split, o.threads));
  return ParallelPlan::Make(model.config(), model.weights(), options);
}

}  // namespace kvmesh::cli
