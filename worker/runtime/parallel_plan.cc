#include "worker/runtime/parallel_plan.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <thread>

#include "worker/kv/kv_memory_fit.h"
#include "worker/runtime/cuda/cuda_memory.h"

namespace kvmesh {
namespace {

std::string Range(int begin, int end) {
  return end - begin == 1 ? std::to_string(begin)
                          : std::to_string(begin) + "-" + std::to_string(end - 1);
}

// Splits [0, n) into `parts` contiguous ranges of `unit`-sized steps as evenly
// as possible; boundary i is a multiple of `unit`. n % unit == 0.
std::vector<int> EvenBoundaries(int n, int parts, int unit) {
  const int units = n / unit;
  std::vector<int> b(parts + 1);
  for (int i = 0; i <= parts; ++i) {
    b[i] = static_cast<int>(static_cast<int64_t>(units) * i / parts) * unit;
  }
  return b;
}

// Contiguous ranges of layers minimising the largest device's bytes
// (`extra_last` is added to the last device: the output head).
std::vector<int> BalancedLayerBoundaries(const std::vector<uint64_t>& layer_bytes, int parts,
                                         uint64_t extra_last) {
  const int n = static_cast<int>(layer_bytes.size());
  std::vector<uint64_t> prefix(n + 1, 0);
  for (int i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + layer_bytes[i];
  constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();
  // best[p][i]: least max bytes putting layers [0, i) on p devices.
  std::vector<std::vector<uint64_t>> best(parts + 1, std::vector<uint64_t>(n + 1, kInf));
  std::vector<std::vector<int>> cut(parts + 1, std::vector<int>(n + 1, 0));
  best[0][0] = 0;
  for (int p = 1; p <= parts; ++p) {
    for (int i = p; i <= n; ++i) {
      for (int j = p - 1; j < i; ++j) {
        if (best[p - 1][j] == kInf) continue;
        uint64_t bytes = prefix[i] - prefix[j];
        if (p == parts && i == n) bytes += extra_last;
        const uint64_t cost = std::max(best[p - 1][j], bytes);
        if (cost < best[p][i]) {
          best[p][i] = cost;
          cut[p][i] = j;
        }
      }
    }
  }
  std::vector<int> b(parts + 1);
  b[parts] = n;
  for (int p = parts; p > 0; --p) b[p - 1] = cut[p][b[p]];
  return b;
}

int ThreadsFor(const DeviceSpec& d, const PlanOptions& o, int num_devices) {
  if (!d.cores.empty()) return static_cast<int>(d.cores.size());
  if (o.threads > 0) return o.threads;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / num_devices);
}

// Bytes of rows [begin, end) of `rows` rows (or columns, which scale alike).
uint64_t Share(uint64_t bytes, int begin, int end, int total) {
  return bytes / static_cast<uint64_t>(total) * static_cast<uint64_t>(end - begin) +
         bytes % static_cast<uint64_t>(total) * static_cast<uint64_t>(end - begin) / total;
}

std::string SplitError(int n, const std::string& why) {
  return "tensor split over " + std::to_string(n) + " devices: " + why;
}

Status PlanLayers(const ModelConfig& c, const ModelWeights& w, const PlanOptions& o,
                  ParallelPlan* plan) {
  const int n = plan->num_devices();
  std::vector<int> b;
  if (!o.layer_split.empty()) {
    if (static_cast<int>(o.layer_split.size()) != n) {
      return InvalidArgumentError("--layer-split gives " + std::to_string(o.layer_split.size()) +
                                  " layer counts for " + std::to_string(n) + " devices");
    }
    b.push_back(0);
    for (int count : o.layer_split) b.push_back(b.back() + count);
    if (b.back() != c.n_layer) {
      return InvalidArgumentError("--layer-split adds up to " + std::to_string(b.back()) +
                                  " layers; the model has " + std::to_string(c.n_layer));
    }
  } else {
    if (n > c.n_layer) {
      return InvalidArgumentError("layer split over " + std::to_string(n) +
                                  " devices: the model has " + std::to_string(c.n_layer) +
                                  " layers, fewer than the devices");
    }
    std::vector<uint64_t> bytes;
    for (const LayerWeights& l : w.layers) bytes.push_back(LayerWeightBytes(l));
    b = BalancedLayerBoundaries(bytes, n, w.output.num_bytes());
  }
  for (int d = 0; d < n; ++d) {
    DeviceShard& s = plan->devices[d];
    s.layer_begin = b[d];
    s.layer_end = b[d + 1];
    s.kv_head_begin = 0;
    s.kv_head_end = c.n_head_kv;
    s.q_head_begin = 0;
    s.q_head_end = c.n_head;
    s.ff_begin = 0;
    s.ff_end = c.is_moe() ? c.n_ff_exp : c.n_ff;
    s.shexp_begin = 0;
    s.shexp_end = c.n_ff_shexp;
    s.embeds = d == 0;
    if (d == n - 1) {
      s.vocab_begin = 0;
      s.vocab_end = c.n_vocab;
    }
    for (int l = s.layer_begin; l < s.layer_end; ++l)
      s.weight_bytes += LayerWeightBytes(w.layers[l]);
    if (s.embeds) s.weight_bytes += w.token_embd.num_bytes();
    if (s.computes_logits()) s.weight_bytes += w.output.num_bytes();
  }
  return Status::Ok();
}

int BlockSize(const WeightMatrix& m) {
  const auto info = LookupTensorType(static_cast<uint32_t>(m.type));
  return info ? static_cast<int>(info->block_size) : 1;
}

// The even cut of `width` feed-forward columns into n parts at whole blocks
// of the down projections (`down`: one per layer), or an error naming `what`.
StatusOr<std::vector<int>> FeedForwardCut(int width, int n,
                                          const std::vector<const WeightMatrix*>& down,
                                          const std::string& what) {
  int unit = 1;
  for (const WeightMatrix* m : down) unit = std::max(unit, BlockSize(*m));
  if (width % unit != 0 || width / unit < n) {
    return InvalidArgumentError(SplitError(n, what + "'s " + std::to_string(width) +
                                                  " columns hold " + std::to_string(width / unit) +
                                                  " blocks of " + std::to_string(unit) +
                                                  ", fewer than the devices; use --split layer"));
  }
  return EvenBoundaries(width, n, unit);
}

Status PlanTensor(const ModelConfig& c, const ModelWeights& w, ParallelPlan* plan) {
  const int n = plan->num_devices();
  if (c.n_head_kv % n != 0) {
    return InvalidArgumentError(
        SplitError(n, "the model's " + std::to_string(c.n_head_kv) + " KV heads do not divide by " +
                          std::to_string(n) + " (each device takes whole KV heads with their " +
                          std::to_string(c.n_head / c.n_head_kv) +
                          " query heads); use a device count that divides them, or --split layer"));
  }
  const int group = c.n_head / c.n_head_kv;
  // The row-parallel matrices are cut between columns: at whole blocks.
  for (const LayerWeights& l : w.layers) {
    const int q_cols_per_device = c.n_embd_q() / n;
    if (q_cols_per_device % BlockSize(l.wo) != 0) {
      return InvalidArgumentError(SplitError(
          n, l.wo.name + " (" + TensorTypeName(l.wo.type) + ", blocks of " +
                 std::to_string(BlockSize(l.wo)) + ") cannot be cut at column " +
                 std::to_string(q_cols_per_device) + "; use fewer devices or --split layer"));
    }
  }
  // A mixture of experts is cut inside every expert (each device holds the
  // same columns of each, and the router whole): a token's experts then run
  // on every device, each on its share, and the all-reduce after the layer
  // sums the shares as it sums a dense FFN's.
  std::vector<const WeightMatrix*> down, down_shexp;
  for (const LayerWeights& l : w.layers) {
    if (!c.is_moe()) down.push_back(&l.w_down);
    for (const WeightMatrix& m : l.down_exps) down.push_back(&m);
    if (c.n_ff_shexp > 0) down_shexp.push_back(&l.down_shexp);
  }
  ASSIGN_OR_RETURN(const std::vector<int> ff,
                   FeedForwardCut(c.is_moe() ? c.n_ff_exp : c.n_ff, n, down,
                                  c.is_moe() ? "each expert" : "the FFN"));
  std::vector<int> shexp(n + 1, 0);
  if (c.n_ff_shexp > 0) {
    ASSIGN_OR_RETURN(shexp, FeedForwardCut(c.n_ff_shexp, n, down_shexp, "the shared expert"));
  }
  const std::vector<int> kv = EvenBoundaries(c.n_head_kv, n, 1);
  // Vocabulary slices start on 16-row panels.
  const int vocab_unit = c.n_vocab >= 16 * n ? 16 : 1;
  std::vector<int> vocab = EvenBoundaries(c.n_vocab / vocab_unit * vocab_unit, n, vocab_unit);
  vocab[n] = c.n_vocab;
  for (int d = 0; d < n; ++d) {
    DeviceShard& s = plan->devices[d];
    s.layer_begin = 0;
    s.layer_end = c.n_layer;
    s.kv_head_begin = kv[d];
    s.kv_head_end = kv[d + 1];
    s.q_head_begin = kv[d] * group;
    s.q_head_end = kv[d + 1] * group;
    s.ff_begin = ff[d];
    s.ff_end = ff[d + 1];
    s.shexp_begin = shexp[d];
    s.shexp_end = shexp[d + 1];
    s.vocab_begin = vocab[d];
    s.vocab_end = vocab[d + 1];
    s.embeds = true;
    for (const LayerWeights& l : w.layers) {
      s.weight_bytes +=
          Share(l.wq.num_bytes() + l.wo.num_bytes(), s.q_head_begin, s.q_head_end, c.n_head) +
          Share(l.wk.num_bytes() + l.wv.num_bytes(), s.kv_head_begin, s.kv_head_end, c.n_head_kv) +
          Share(l.w_gate.num_bytes() + l.w_up.num_bytes() + l.w_down.num_bytes(), s.ff_begin,
                s.ff_end, c.n_ff);
      for (size_t e = 0; e < l.gate_exps.size(); ++e) {
        s.weight_bytes += Share(
            l.gate_exps[e].num_bytes() + l.up_exps[e].num_bytes() + l.down_exps[e].num_bytes(),
            s.ff_begin, s.ff_end, c.n_ff_exp);
      }
      s.weight_bytes += l.w_gate_inp.num_bytes();
      if (c.n_ff_shexp > 0) {
        s.weight_bytes +=
            Share(l.gate_shexp.num_bytes() + l.up_shexp.num_bytes() + l.down_shexp.num_bytes(),
                  s.shexp_begin, s.shexp_end, c.n_ff_shexp);
      }
    }
    s.weight_bytes += w.token_embd.num_bytes();
    s.weight_bytes += Share(w.output.num_bytes(), s.vocab_begin, s.vocab_end, c.n_vocab);
  }
  return Status::Ok();
}

}  // namespace

std::string_view SplitKindName(SplitKind split) {
  switch (split) {
    case SplitKind::kNone:
      return "none";
    case SplitKind::kLayer:
      return "layer";
    case SplitKind::kTensor:
      return "tensor";
  }
  return "?";
}

StatusOr<SplitKind> ParseSplitKind(std::string_view text) {
  if (text == "layer") return SplitKind::kLayer;
  if (text == "tensor") return SplitKind::kTensor;
  if (text == "none") return SplitKind::kNone;
  return InvalidArgumentError("--split '" + std::string(text) + "': expected layer or tensor");
}

StatusOr<std::vector<int>> ParseLayerSplit(std::string_view text) {
  std::vector<int> counts;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    if (comma == std::string_view::npos) comma = text.size();
    const std::string_view item = text.substr(start, comma - start);
    int value = 0;
    const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
    if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value < 1) {
      return InvalidArgumentError("--layer-split '" + std::string(text) + "': '" +
                                  std::string(item) +
                                  "' is not a positive layer count (expected e.g. 10,6)");
    }
    counts.push_back(value);
    start = comma + 1;
  }
  return counts;
}

StatusOr<PlanOptions> PlanOptions::Parse(std::string_view devices, std::string_view split,
                                         std::string_view layer_split, int threads) {
  PlanOptions o;
  if (!devices.empty()) {
    ASSIGN_OR_RETURN(o.devices, ParseDeviceList(devices));
  }
  if (!split.empty()) {
    ASSIGN_OR_RETURN(o.split, ParseSplitKind(split));
  }
  if (!layer_split.empty()) {
    ASSIGN_OR_RETURN(o.layer_split, ParseLayerSplit(layer_split));
  }
  if (threads < 0 || threads > 1024) {
    return InvalidArgumentError("--threads " + std::to_string(threads) + " is outside 0..1024");
  }
  o.threads = threads;
  return o;
}

uint64_t LayerWeightBytes(const LayerWeights& l) {
  uint64_t bytes = l.wq.num_bytes() + l.wk.num_bytes() + l.wv.num_bytes() + l.wo.num_bytes() +
                   l.w_gate.num_bytes() + l.w_up.num_bytes() + l.w_down.num_bytes() +
                   l.w_gate_inp.num_bytes() + l.gate_shexp.num_bytes() + l.up_shexp.num_bytes() +
                   l.down_shexp.num_bytes();
  for (const auto* experts : {&l.gate_exps, &l.up_exps, &l.down_exps}) {
    for (const WeightMatrix& m : *experts) bytes += m.num_bytes();
  }
  return bytes;
}

KvLayout DeviceShard::ShardLayout(const KvLayout& full) const {
  KvLayout layout = full;
  layout.n_layer = num_layers();
  layout.n_head_kv = num_kv_heads();
  layout.k_bias = nullptr;  // transforms use the full layout's table
  return layout;
}

std::vector<bool> DeviceShard::WindowedLayers(const ModelConfig& config) const {
  std::vector<bool> windowed;
  for (int l = layer_begin; l < layer_end; ++l) windowed.push_back(config.LayerWindow(l) > 0);
  return windowed;
}

std::string DeviceShard::Describe(SplitKind split) const {
  std::string s;
  if (split == SplitKind::kTensor) {
    s = "kv heads " + Range(kv_head_begin, kv_head_end) + ", query heads " +
        Range(q_head_begin, q_head_end) + ", ffn " + Range(ff_begin, ff_end) + ", vocab " +
        Range(vocab_begin, vocab_end);
  } else {
    s = "layers " + Range(layer_begin, layer_end);
    if (embeds) s += ", embedding";
    if (computes_logits()) s += ", output";
  }
  return s;
}

int ParallelPlan::DeviceOfLayer(int layer) const {
  for (int d = 0; d < num_devices(); ++d) {
    if (devices[d].holds_layer(layer)) return d;
  }
  return 0;
}

std::string ParallelPlan::ToString() const {
  std::string s = split == SplitKind::kNone ? "one device: "
                                            : std::string(SplitKindName(split)) + " split over ";
  for (int d = 0; d < num_devices(); ++d) {
    const DeviceShard& dev = devices[d];
    if (d > 0) s += ", ";
    s += dev.device.ToString() + " (" + dev.Describe(split) + "; " + std::to_string(dev.threads) +
         (dev.threads == 1 ? " thread; " : " threads; ") + FormatBytes(dev.weight_bytes) +
         " of weights)";
  }
  return s;
}

StatusOr<ParallelPlan> ParallelPlan::Make(const ModelConfig& c, const ModelWeights& w,
                                          const PlanOptions& o) {
  ParallelPlan plan;
  std::vector<DeviceSpec> devices = o.devices;
  if (devices.empty()) devices.push_back(DeviceSpec{});
  const int n = static_cast<int>(devices.size());
  for (const DeviceSpec& d : devices) {
    DeviceShard shard;
    shard.device = d;
    shard.threads = ThreadsFor(d, o, n);
    plan.devices.push_back(shard);
  }
  if (!o.layer_split.empty() && (n == 1 || o.split != SplitKind::kLayer)) {
    if (n > 1 || o.layer_split.size() != 1) {
      return InvalidArgumentError("--layer-split applies to --split layer over several devices");
    }
  }
  plan.split = n == 1 ? SplitKind::kNone : o.split;
  if (plan.split == SplitKind::kNone && n > 1) {
    return InvalidArgumentError("several devices need --split layer or --split tensor");
  }
  if (plan.split == SplitKind::kTensor) {
    RETURN_IF_ERROR(PlanTensor(c, w, &plan));
  } else {
    RETURN_IF_ERROR(PlanLayers(c, w, o, &plan));
  }
  int cuda = 0;
  for (DeviceShard& d : plan.devices) {
    if (d.device.kind != DeviceKind::kCuda) continue;
    d.workspace_bytes = CudaWorkspaceBytes(c, d);
    ++cuda;
  }
  if (cuda > 0 && cuda < n) {
    return InvalidArgumentError("--devices: a plan's devices are all CPU or all CUDA devices");
  }
  return plan;
}

}  // namespace kvmesh
