#include "worker/runtime/model_executor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string_view>

#include "common/log.h"
#include "worker/runtime/cpu/cpu_executor.h"
#include "worker/runtime/cpu/local_communicator.h"
#include "worker/runtime/cuda/nccl_communicator.h"

#if defined(KVMESH_HAS_CUDA)
#include "worker/runtime/cuda/cuda_executor.h"
#endif

namespace kvmesh {

StatusOr<std::unique_ptr<ModelExecutor>> ModelExecutor::Create(const Model& model,
                                                               const KvLayout& layout,
                                                               const ParallelPlan& plan,
                                                               int64_t num_blocks,
                                                               kernels::Isa isa) {
  const ModelConfig& c = model.config();
  RETURN_IF_ERROR(layout.Validate());
  if (layout.n_layer != c.n_layer || layout.n_head_kv != c.n_head_kv ||
      layout.head_dim != c.head_dim) {
    return InvalidArgumentError("KV layout (" + layout.ToString() + ") does not match the model (" +
                                std::to_string(c.n_layer) + " layers, " +
                                std::to_string(c.n_head_kv) + " KV heads, head size " +
                                std::to_string(c.head_dim) + ")");
  }
  if (num_blocks <= 0 || num_blocks > (1ll << 31) - 1) {
    return InvalidArgumentError("number of KV blocks " + std::to_string(num_blocks) +
                                " is outside 1..2^31-1");
  }
  if (layout.window_blocks < 0 || layout.window_blocks > (1ll << 31) - 1) {
    return InvalidArgumentError("number of KV window blocks " +
                                std::to_string(layout.window_blocks) + " is outside 0..2^31-1");
  }
  if (layout.window_blocks > 0 && c.MaxWindow() == 0) {
    return InvalidArgumentError(
        "the KV layout has window pages, but the model has no sliding-window "
        "layer");
  }
  if (layout.window_blocks > 0 && !plan.devices.empty() &&
      plan.devices.front().device.kind == DeviceKind::kCuda) {
    return UnimplementedError(
        "window pages (kv_window_pages) are CPU-only: the CUDA executor "
        "has no sliding-window attention");
  }
  if (plan.devices.empty()) return InvalidArgumentError("the parallel plan has no device");
  const bool cuda = plan.devices.front().device.kind == DeviceKind::kCuda;
  for (const DeviceShard& d : plan.devices) {
    if ((d.device.kind == DeviceKind::kCuda) != cuda) {
      return InvalidArgumentError("a plan's devices are all CPU or all CUDA devices");
    }
  }
#if !defined(KVMESH_HAS_CUDA)
  if (cuda) {
    return UnimplementedError("device " + plan.devices.front().device.Name() +
                              ": this kvmesh build has no CUDA executor (built without nvcc); " +
                              "run on cpu:N devices");
  }
#endif
  std::unique_ptr<ModelExecutor> exec(new ModelExecutor(model, layout, plan, num_blocks));
  const int n = plan.num_devices();
  if (plan.split == SplitKind::kTensor) {
    // GPUs of their own meet through NCCL; virtual devices sharing a GPU
    // (and CPU devices) through shared host memory.
    bool distinct_gpus = cuda;
    std::vector<int> gpus;
    for (const DeviceShard& d : plan.devices) {
      distinct_gpus = distinct_gpus && d.device.virtual_index < 0;
      gpus.push_back(d.device.index);
    }
    if (distinct_gpus) {
      ASSIGN_OR_RETURN(exec->comms_, CreateNcclCommunicators(gpus));
    } else {
      exec->comms_ = LocalCommunicator::Create(n);
    }
  }
  bool pinned = false;
  for (const DeviceShard& d : plan.devices) pinned = pinned || !d.device.cores.empty();
  // Which devices get a thread of their own: the devices of a tensor split
  // run at once, and a pinned device's driver keeps to its cores. The rest
  // run on the calling thread, which otherwise would only wait (and on a
  // machine with as many cores as device threads, steal a core from them).
  for (int d = 0; d < n; ++d) {
    Communicator* comm = exec->comms_.empty() ? nullptr : exec->comms_[d].get();
    if (cuda) {
#if defined(KVMESH_HAS_CUDA)
      const CudaExecutorOptions options = CudaExecutorOptions::FromEnv();
      auto backend =
          CudaExecutor::Create(model, layout, plan.devices[d], num_blocks, comm, options);
      if (!backend.ok()) return backend.status();
      exec->backends_.push_back(std::move(backend).value());
#endif
    } else {
      auto backend = CpuExecutor::Create(model, layout, plan.devices[d], num_blocks, comm, isa);
      if (!backend.ok()) return backend.status();
      exec->backends_.push_back(std::move(backend).value());
    }
    const bool own_thread =
        !plan.devices[d].device.cores.empty() || (plan.split == SplitKind::kTensor && d > 0);
    exec->threads_.emplace_back();
    if (own_thread) {
      auto thread = std::make_unique<DeviceThread>(plan.devices[d].device.cores);
      RETURN_IF_ERROR(thread->Start().WithPrefix("device " + plan.devices[d].device.ToString()));
      exec->threads_.back() = std::move(thread);
    }
  }
  return exec;
}

StatusOr<std::unique_ptr<ModelExecutor>> ModelExecutor::CreateOnCpu(const Model& model,
                                                                    const KvLayout& layout,
                                                                    int64_t num_blocks,
                                                                    int num_threads,
                                                                    kernels::Isa isa) {
  PlanOptions options;
  options.threads = num_threads;
  if (num_threads < 1 || num_threads > 1024) {
    return InvalidArgumentError("thread count " + std::to_string(num_threads) +
                                " is outside 1..1024");
  }
  return Create(model, layout, options, num_blocks, isa);
}

StatusOr<std::unique_ptr<ModelExecutor>> ModelExecutor::Create(const Model& model,
                                                               const KvLayout& layout,
                                                               const PlanOptions& options,
                                                               int64_t num_blocks,
                                                               kernels::Isa isa) {
  ASSIGN_OR_RETURN(ParallelPlan plan, ParallelPlan::Make(model.config(), model.weights(), options));
  return Create(model, layout, plan, num_blocks, isa);
}

ModelExecutor::ModelExecutor(const Model& model, const KvLayout& layout, ParallelPlan plan,
                             int64_t num_blocks)
    : config_(model.config()),
      layout_(layout),
      plan_(std::move(plan)),
      num_blocks_(num_blocks),
      max_window_(model.config().MaxWindow()),
      graph_(model.config()) {}

// Device threads go first: they may be running a job that uses a backend.
ModelExecutor::~ModelExecutor() { threads_.clear(); }

Status ModelExecutor::Validate(const ForwardBatch& batch) const {
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  for (int64_t i = 0; i < n_tokens; ++i) {
    const int32_t t = batch.tokens[i];
    if (t < 0 || t >= config_.n_vocab) {
      return InvalidArgumentError("token id " + std::to_string(t) + " at batch index " +
                                  std::to_string(i) + " is outside the vocabulary (0.." +
                                  std::to_string(config_.n_vocab - 1) + ")");
    }
  }
  const int bs = layout_.block_size;
  int64_t covered = 0;
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceChunk& seq = batch.sequences[s];
    const std::string where = "sequence " + std::to_string(s) + ": ";
    if (seq.num_tokens <= 0 || seq.first_token != covered ||
        seq.first_token + seq.num_tokens > n_tokens) {
      return InvalidArgumentError(where + "token range [" + std::to_string(seq.first_token) +
                                  ", +" + std::to_string(seq.num_tokens) +
                                  ") does not continue the batch's tokens in order");
    }
    covered += seq.num_tokens;
    if (seq.start_pos < 0) return InvalidArgumentError(where + "negative start position");
    const int64_t end_pos = static_cast<int64_t>(seq.start_pos) + seq.num_tokens;
    const int64_t blocks_needed = (end_pos + bs - 1) / bs;
    if (static_cast<int64_t>(seq.block_table.size()) < blocks_needed) {
      return InvalidArgumentError(where + "block table has " +
                                  std::to_string(seq.block_table.size()) +
                                  " blocks, positions up to " + std::to_string(end_pos) + " need " +
                                  std::to_string(blocks_needed));
    }
    for (int64_t b = 0; b < blocks_needed; ++b) {
      if (seq.block_table[b] < 0 || seq.block_table[b] >= num_blocks_) {
        return InvalidArgumentError(where + "block id " + std::to_string(seq.block_table[b]) +
                                    " is outside the pool of " + std::to_string(num_blocks_) +
                                    " blocks");
      }
    }
    if (layout_.window_blocks == 0) {
      if (!seq.window_table.empty()) {
        return InvalidArgumentError(where +
                                    "has a window table, but the layout has no window "
                                    "pages");
      }
      continue;
    }
    if (static_cast<int64_t>(seq.window_table.size()) < blocks_needed) {
      return InvalidArgumentError(where + "window table has " +
                                  std::to_string(seq.window_table.size()) +
                                  " blocks, positions up to " + std::to_string(end_pos) + " need " +
                                  std::to_string(blocks_needed));
    }
    // The first position any of the chunk's tokens attends to in a windowed
    // layer: blocks before it may be released (-1).
    const int64_t first_seen = std::max<int64_t>(0, seq.start_pos - max_window_ + 1);
    for (int64_t b = first_seen / bs; b < blocks_needed; ++b) {
      if (seq.window_table[b] < 0 || seq.window_table[b] >= layout_.window_blocks) {
        return InvalidArgumentError(where + "window block id " +
                                    std::to_string(seq.window_table[b]) + " at block " +
                                    std::to_string(b) + " is outside the window pool of " +
                                    std::to_string(layout_.window_blocks) + " blocks");
      }
    }
  }
  if (covered != n_tokens) {
    return InvalidArgumentError("the sequences cover " + std::to_string(covered) +
                                " of the batch's " + std::to_string(n_tokens) + " tokens");
  }
  return Status::Ok();
}

void ModelExecutor::RunOnDevices(const std::function<void(int)>& job, bool concurrent) {
  const int n = plan_.num_devices();
  if (concurrent) {
    for (int d = 0; d < n; ++d) {
      if (threads_[d]) threads_[d]->Post([&job, d] { job(d); });
    }
    for (int d = 0; d < n; ++d) {
      if (!threads_[d]) job(d);
    }
    for (int d = 0; d < n; ++d) {
      if (threads_[d]) threads_[d]->Wait();
    }
    return;
  }
  for (int d = 0; d < n; ++d) {
    if (threads_[d]) {
      threads_[d]->Post([&job, d] { job(d); });
      threads_[d]->Wait();
    } else {
      job(d);
    }
  }
}

Status ModelExecutor::Forward(const ForwardBatch& batch, ForwardOutput* output) {
  RETURN_IF_ERROR(Validate(batch));
  const int64_t n_tokens = static_cast<int64_t>(batch.tokens.size());
  output->logits.clear();
  output->first_row.assign(batch.sequences.size(), -1);
  output->n_vocab = config_.n_vocab;
  if (n_tokens == 0) return Status::Ok();

  positions_.resize(n_tokens);
  token_seq_.resize(n_tokens);
  logit_rows_.clear();
  for (size_t s = 0; s < batch.sequences.size(); ++s) {
    const SequenceChunk& seq = batch.sequences[s];
    for (int32_t i = 0; i < seq.num_tokens; ++i) {
      positions_[seq.first_token + i] = seq.start_pos + i;
      token_seq_[seq.first_token + i] = static_cast<int32_t>(s);
    }
    if (seq.logits == LogitsMode::kNone) continue;
    output->first_row[s] = static_cast<int64_t>(logit_rows_.size());
    const int64_t first =
        seq.logits == LogitsMode::kAll ? seq.first_token : seq.first_token + seq.num_tokens - 1;
    for (int64_t t = first; t < seq.first_token + seq.num_tokens; ++t) logit_rows_.push_back(t);
  }
  output->logits.resize(logit_rows_.size() * config_.n_vocab);

  StepView step;
  step.batch = &batch;
  step.positions = positions_;
  step.token_seq = token_seq_;
  step.logit_rows = logit_rows_;
  step.logits = output->logits.data();
  step.n_vocab = config_.n_vocab;

  // A step whose graph a device could not capture or launch ran nowhere on
  // that device (kAborted) and runs once more, without graphs there; the
  // other devices' parts of it rewrite the same KV slots with the same values.
  Status status;
  for (int attempt = 0; attempt < 2; ++attempt) {
    RunStep(step, n_tokens);
    status = Status::Ok();
    bool rerun = false;
    for (auto& b : backends_) {
      Status s = b->TakeError();
      rerun = rerun || s.code() == StatusCode::kAborted;
      if (status.ok() && !s.ok()) status = s;
    }
    if (!rerun || attempt == 1) break;
    Log(LogLevel::kWarning, "executor", "step run again: " + status.message());
  }
  if (status.ok() && config_.final_softcap > 0.0f) {
    // cap · tanh(logit / cap), the division as a multiplication by 1 / cap
    // (as the GGUF ecosystem computes it).
    const float cap = config_.final_softcap;
    const float inv = 1.0f / cap;
    for (float& x : output->logits) x = cap * std::tanh(x * inv);
  }
  return status;
}

void ModelExecutor::RunStep(const StepView& step, int64_t n_tokens) {
  const int n = plan_.num_devices();
  if (plan_.split == SplitKind::kLayer) {
    residual_.resize(n_tokens * config_.n_embd);
    RunOnDevices(
        [&](int d) {
          const DeviceShard& shard = plan_.devices[d];
          GraphBackend& b = *backends_[d];
          b.BeginStep(step);
          if (d > 0) b.WriteResidual(residual_.data());
          graph_.Run(b, {shard.layer_begin, shard.layer_end, d == 0, d == n - 1});
          if (d < n - 1) b.ReadResidual(residual_.data());
        },
        /*concurrent=*/false);
  } else {
    RunOnDevices(
        [&](int d) {
          GraphBackend& b = *backends_[d];
          b.BeginStep(step);
          graph_.Run(b, {0, config_.n_layer, true, true});
        },
        /*concurrent=*/true);
  }
}

Status ModelExecutor::ReadBlock(int32_t block, std::vector<uint8_t>* out) const {
  out->resize(layout_.bytes_per_block());
  return ReadBlockInto(block, *out);
}

// A block's bytes are every layer's page at one id; with window pages the
// windowed layers' pages have ids of their own, so no block is whole.
static Status CheckWholeBlocks(const KvLayout& layout) {
  if (layout.window_blocks == 0) return Status::Ok();
  return FailedPreconditionError(
      "the sliding-window layers keep their KV pages apart (window pages), so a block cannot be "
      "read or written whole: the host tier and page transfer need window pages off");
}

Status ModelExecutor::ReadBlockInto(int32_t block, std::span<uint8_t> out) const {
  RETURN_IF_ERROR(CheckWholeBlocks(layout_));
  if (block < 0 || block >= num_blocks_) {
    return InvalidArgumentError("block id " + std::to_string(block) + " is outside the pool");
  }
  if (out.size() != layout_.bytes_per_block()) {
    return InvalidArgumentError("block buffer has " + std::to_string(out.size()) +
                                " bytes, expected " + std::to_string(layout_.bytes_per_block()));
  }
  for (const auto& b : backends_) b->ReadBlock(block, out.data());
  for (const auto& b : backends_) RETURN_IF_ERROR(b->TakeError());
  return Status::Ok();
}

Status ModelExecutor::WriteBlock(int32_t block, std::span<const uint8_t> bytes) {
  RETURN_IF_ERROR(CheckWholeBlocks(layout_));
  if (block < 0 || block >= num_blocks_) {
    return InvalidArgumentError("block id " + std::to_string(block) + " is outside the pool");
  }
  if (bytes.size() != layout_.bytes_per_block()) {
    return InvalidArgumentError("block data has " + std::to_string(bytes.size()) +
                                " bytes, expected " + std::to_string(layout_.bytes_per_block()));
  }
  for (auto& b : backends_) b->WriteBlock(block, bytes.data());
  for (auto& b : backends_) RETURN_IF_ERROR(b->TakeError());
  return Status::Ok();
}

std::vector<DeviceCounters> ModelExecutor::Counters() const {
  std::vector<DeviceCounters> out;
  for (const auto& b : backends_) out.push_back(b->counters());
  return out;
}

StatusOr<KvFit> FitKvBlocksOnDevices(std::string_view budget_text, const KvLayout& layout,
                                     const ParallelPlan& plan, int64_t context_tokens,
                                     const GpuMemoryProbe& probe) {
  ASSIGN_OR_RETURN(KvMemoryBudget budget, ParseKvMemoryBudget(budget_text));
  uint64_t host_available = 0;
  int cpu_devices = 0;
  std::map<int, int> shards_on_gpu;
  for (const DeviceShard& d : plan.devices) {
    if (d.device.kind == DeviceKind::kCpu) {
      ++cpu_devices;
    } else {
      ++shards_on_gpu[d.device.index];
    }
  }
  if (budget.fraction > 0.0 && cpu_devices > 0) {
    ASSIGN_OR_RETURN(host_available, ReadMemAvailable());
  }
  std::map<int, GpuMemory> gpu_memory;
  for (const auto& [gpu, count] : shards_on_gpu) {
    ASSIGN_OR_RETURN(gpu_memory[gpu], probe(gpu));
  }
  KvFit total;
  for (size_t i = 0; i < plan.devices.size(); ++i) {
    const DeviceShard& d = plan.devices[i];
    KvFitInputs inputs;
    inputs.context_tokens = context_tokens;
    inputs.weights_bytes = d.weight_bytes;
    const KvLayout shard_layout = d.ShardLayout(layout);
    const std::string where = "device " + d.device.Name() + " (" + d.Describe(plan.split) + ", " +
                              FormatBytes(d.weight_bytes) + " of weights)";
    if (d.device.kind == DeviceKind::kCpu) {
      inputs.available_bytes = host_available / std::max(1, cpu_devices);
    } else {
      const uint64_t share = gpu_memory[d.device.index].free_bytes / shards_on_gpu[d.device.index];
      inputs.available_bytes = share > d.workspace_bytes ? share - d.workspace_bytes : 0;
      if (budget.fraction == 0.0 && d.weight_bytes + budget.bytes > inputs.available_bytes) {
        return ResourceExhaustedError(
            where + ": --kv-memory " + budget.text + " with the weights needs " +
            FormatBytes(d.weight_bytes + budget.bytes) + ", but the GPU has " + FormatBytes(share) +
            " free for this device and its workspace takes " + FormatBytes(d.workspace_bytes));
      }
    }
    auto fit = FitKvBlocks(budget, shard_layout, inputs);
    if (!fit.ok()) {
      if (plan.num_devices() == 1) return fit.status();
      return fit.status().WithPrefix(where);
    }
    if (i == 0 || fit->num_blocks < total.num_blocks) {
      total.num_blocks = fit->num_blocks;
      total.budget_bytes = fit->budget_bytes;
    }
  }
  for (const DeviceShard& d : plan.devices) {
    total.bytes_used +=
        static_cast<uint64_t>(total.num_blocks) * d.ShardLayout(layout).bytes_per_block();
  }
  total.num_tokens = total.num_blocks * layout.block_size;
  return total;
}

int64_t BlocksBesideWindowPages(int64_t whole_blocks, int64_t window_blocks,
                                const ParallelPlan& plan, const ModelConfig& config) {
  // Every layer's page of a block has the same size on a device.
  // With every layer windowed, a block id has no pages of its own: ids then
  // only bound the prefix index and a context's length, at 8 times as many.
  constexpr int64_t kMaxBlocks = (int64_t{1} << 31) - 1;
  int64_t blocks = std::min(kMaxBlocks, 8 * whole_blocks);
  for (const DeviceShard& d : plan.devices) {
    const std::vector<bool> windowed = d.WindowedLayers(config);
    const int64_t n_windowed = std::count(windowed.begin(), windowed.end(), true);
    const int64_t n_other = static_cast<int64_t>(windowed.size()) - n_windowed;
    if (n_other == 0) {
      // Window pages only: they must fit where whole blocks did.
      if (window_blocks > whole_blocks) return 0;
      continue;
    }
    // In units of one layer's page: the device's budget, less the window pages.
    const int64_t budget = whole_blocks * (n_other + n_windowed) - window_blocks * n_windowed;
    blocks = std::min(blocks, std::max<int64_t>(0, budget / n_other));
  }
  return blocks;
}

}  // namespace kvmesh
