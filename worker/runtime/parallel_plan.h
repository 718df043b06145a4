// ParallelPlan: how one model is split over the devices of a worker.
//
//   none    one device holds everything (the default, `--devices cpu:0`).
//   layer   each device holds a contiguous range of layers with their weights
//           and KV pages; the residual stream hops from device to device. The
//           ranges are balanced by weight bytes (the output head counts for
//           the last device), or given with --layer-split 10,6.
//   tensor  Megatron-style: each device takes whole KV heads with their query
//           heads (GQA groups stay together) and a slice of the FFN columns.
//           Q, K, V, gate and up are split by rows (column-parallel), the
//           attention output and down matrices by columns (row-parallel),
//           with one all-reduce after attention and one after the FFN.
//           The output head is split by vocabulary rows: each device computes
//           the logits of its slice straight into the host's logit rows, so
//           the largest matrix is divided by the device count at no collective
//           cost, and every logit is the same dot product as unsplit. The
//           token embedding is replicated: a step reads one row per token.
//
// A device's KV pages hold only its layers (layer) or its KV heads (tensor);
// block ids stay global, so a sequence keeps one block table. The plan is a
// value computed once from the model and the options; it validates that the
// counts divide and names them when they do not.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/status.h"
#include "worker/kv/kv_layout.h"
#include "worker/model/model_config.h"
#include "worker/model/model_weights.h"
#include "worker/runtime/device_spec.h"

namespace kvmesh {

enum class SplitKind { kNone, kLayer, kTensor };

std::string_view SplitKindName(SplitKind split);
// "layer" or "tensor" ("none" too).
StatusOr<SplitKind> ParseSplitKind(std::string_view text);

// What one device holds and computes. Ranges are [begin, end).
struct DeviceShard {
  DeviceSpec device;
  int threads = 1;
  int layer_begin = 0, layer_end = 0;
  int kv_head_begin = 0, kv_head_end = 0;
  int q_head_begin = 0, q_head_end = 0;
  // Feed-forward columns held here: of the dense FFN, or in a mixture of
  // experts of every expert (each device holds the same slice of each), and
  // of the shared expert (shexp_*; empty without one).
  int ff_begin = 0, ff_end = 0;
  int shexp_begin = 0, shexp_end = 0;
  int vocab_begin = 0, vocab_end = 0;  // output rows computed here; empty: none
  bool embeds = false;                 // looks the step's tokens up
  uint64_t weight_bytes = 0;           // matrices held, in their GGUF types
  uint64_t workspace_bytes = 0;        // CUDA devices: buffers besides weights and KV

  int num_layers() const { return layer_end - layer_begin; }
  int num_kv_heads() const { return kv_head_end - kv_head_begin; }
  int num_q_heads() const { return q_head_end - q_head_begin; }
  int num_ff() const { return ff_end - ff_begin; }
  bool computes_logits() const { return vocab_end > vocab_begin; }
  bool holds_layer(int layer) const { return layer >= layer_begin && layer < layer_end; }
  // The KV geometry of this device's pages: its layers and heads only.
  KvLayout ShardLayout(const KvLayout& full) const;
  // Per layer of this device, whether `config` gives it a sliding window
  // (its pages are window pages when the layout has them).
  std::vector<bool> WindowedLayers(const ModelConfig& config) const;
  // "layers 0-3, embedding" or "kv heads 0-3, query heads 0-7, ffn 0-1023,
  // vocab 0-15999".
  std::string Describe(SplitKind split) const;
};

struct PlanOptions {
  std::vector<DeviceSpec> devices;      // empty: one unpinned cpu:0
  SplitKind split = SplitKind::kLayer;  // used when there are several devices
  std::vector<int> layer_split;         // layers per device (layer split), optional
  int threads = 0;                      // per unpinned CPU device; 0: cores / devices

  // From the flags' text: --devices (empty: cpu:0), --split (empty: layer),
  // --layer-split (empty: balanced) and --threads.
  static StatusOr<PlanOptions> Parse(std::string_view devices, std::string_view split,
                                     std::string_view layer_split, int threads);
};

struct ParallelPlan {
  SplitKind split = SplitKind::kNone;
  std::vector<DeviceShard> devices;

  int num_devices() const { return static_cast<int>(devices.size()); }
  // The device whose layers include `layer` (layer split), else 0.
  int DeviceOfLayer(int layer) const;
  // "layer split over cpu:0 (layers 0-2), cpu:1 (layers 3-4)".
  std::string ToString() const;

  // Validates the options against the model and builds the plan. Errors name
  // the counts that do not divide or the range that is wrong.
  static StatusOr<ParallelPlan> Make(const ModelConfig& config, const ModelWeights& weights,
                                     const PlanOptions& options);
};

// Parses "--layer-split 10,6".
StatusOr<std::vector<int>> ParseLayerSplit(std::string_view text);

// Bytes of the weight matrices a layer holds (q, k, v, o, gate, up, down).
uint64_t LayerWeightBytes(const LayerWeights& layer);

}  // namespace kvmesh
