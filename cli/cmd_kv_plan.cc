// `kvmesh kv-plan`: how much KV memory a model needs, before anything runs.
//
//   kvmesh kv-plan -m MODEL --context 32768 --kv-type q4_0
//       --kv-memory 12GiB --kv-host-memory 32GiB
//
// Prints the bytes one token's K and V take across all layers
// (layers × KV heads × (K row + V row bytes), i.e. 2 × layers × kv_heads ×
// head_dim × bytes per value for equal K and V types), one sequence of
// --context tokens (whole blocks), and how many such sequences each tier's
// budget holds. Budgets take the worker's syntax: a size, or a fraction
// (device: of the memory left after the weights; host: of MemAvailable).
// Reads the model's metadata only; computes nothing.
#include <cstdio>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "cli/commands.h"
#include "cli/kv_options.h"
#include "cli/local_model.h"
#include "worker/kv/kv_memory_fit.h"

namespace kvmesh::cli {
namespace {

struct KvPlanOptions {
  std::string model;
  int64_t context = 0;
  std::string device_memory = "512MiB";
  std::string host_memory = "0";
  bool json = false;
  KvCliOptions kv;
};

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

// A budget in bytes; `rest` is what a fraction is taken of.
StatusOr<uint64_t> ResolveBudget(const std::string& text, const char* option, uint64_t weights,
                                 bool of_rest_after_weights) {
  if (text.empty() || text == "0") return uint64_t{0};
  auto budget = ParseKvMemoryBudget(text);
  if (!budget.ok()) return budget.status().WithPrefix(option);
  if (budget->fraction == 0.0) return budget->bytes;
  ASSIGN_OR_RETURN(uint64_t available, ReadMemAvailable());
  const uint64_t base =
      of_rest_after_weights ? (available > weights ? available - weights : 0) : available;
  return static_cast<uint64_t>(budget->fraction * static_cast<double>(base));
}

int Plan(const KvPlanOptions& o) {
  auto local = LoadLocalModel(o.model);
  if (!local.ok()) return Fail(local.status());
  const Model& model = *local->model;
  const ModelConfig& c = model.config();
  auto layout = BuildKvLayout(o.kv, model);
  if (!layout.ok()) return Fail(layout.status());
  const int64_t context = o.context > 0 ? o.context : c.n_ctx_train;
  std::error_code ec;
  const uint64_t weights = std::filesystem::file_size(model.path(), ec);
  auto device = ResolveBudget(o.device_memory, "--kv-memory", ec ? 0 : weights, true);
  if (!device.ok()) return Fail(device.status());
  auto host = ResolveBudget(o.host_memory, "--kv-host-memory", 0, false);
  if (!host.ok()) return Fail(host.status());

  const uint64_t per_token = layout->bytes_per_token();
  const uint64_t per_block = layout->bytes_per_block();
  const int64_t seq_blocks = (context + layout->block_size - 1) / layout->block_size;
  const uint64_t per_sequence = per_block * static_cast<uint64_t>(seq_blocks);
  const double values_per_token = 2.0 * c.n_layer * layout->n_head_kv * layout->head_dim;
  const double bits_per_value = 8.0 * static_cast<double>(per_token) / values_per_token;
  struct Tier {
    const char* name;
    uint64_t budget;
  };
  const Tier tiers[] = {{"device", *device}, {"host", *host}};

  if (o.json) {
    nlohmann::json out = {{"model", c.name},
                          {"kv_type", layout->TypeName()},
                          {"layers", c.n_layer},
                          {"kv_heads", layout->n_head_kv},
                          {"head_dim", layout->head_dim},
                          {"block_size", layout->block_size},
                          {"bits_per_value", bits_per_value},
                          {"bytes_per_token", per_token},
                          {"context", context},
                          {"bytes_per_sequence", per_sequence}};
    for (const Tier& t : tiers) {
      const int64_t blocks = static_cast<int64_t>(t.budget / per_block);
      out["tiers"][t.name] = {{"budget_bytes", t.budget},
                              {"blocks", blocks},
                              {"tokens", blocks * layout->block_size},
                              {"sequences", blocks / seq_blocks}};
    }
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  }
  std::printf("model        %s: %d layers, %d KV heads of %d\n", c.name.c_str(), c.n_layer,
              layout->n_head_kv, layout->head_dim);
  std::printf("kv type      %s (%.3f bits per value, blocks of %d tokens)\n",
              layout->TypeName().c_str(), bits_per_value, layout->block_size);
  std::printf("per token    %s (2 x %d layers x %d KV heads x %d values)\n",
              FormatBytes(per_token).c_str(), c.n_layer, layout->n_head_kv, layout->head_dim);
  std::printf("per sequence %s (%lld tokens in %lld blocks)\n", FormatBytes(per_sequence).c_str(),
              static_cast<long long>(context), static_cast<long long>(seq_blocks));
  for (const Tier& t : tiers) {
    const int64_t blocks = static_cast<int64_t>(t.budget / per_block);
    std::printf("%-6s tier  %s: %lld blocks, %lld tokens, %lld sequences of %lld tokens\n", t.name,
                FormatBytes(t.budget).c_str(), static_cast<long long>(blocks),
                static_cast<long long>(blocks * layout->block_size),
                static_cast<long long>(blocks / seq_blocks), static_cast<long long>(context));
  }
  return 0;
}

}  // namespace

void RegisterKvPlanCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<KvPlanOptions>();
  CLI::App* cmd = app.add_subcommand(
      "kv-plan", "KV bytes per token and per sequence, and how many sequences each tier holds");
  cmd->add_option("-m,--model", o->model, "GGUF model (default: stories260K.gguf, see README)");
  cmd->add_option("-c,--context", o->context, "Tokens per sequence (default: the model's context)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 30));
  AddKvOptions(cmd, &o->kv, /*with_transforms=*/false, /*with_memory=*/false);
  cmd->add_option("--kv-memory", o->device_memory,
                  "Device tier budget: a size (12GiB) or a fraction of the memory left after the "
                  "weights (0.9, 90%)")
      ->capture_default_str();
  cmd->add_option("--kv-host-memory", o->host_memory,
                  "Host tier budget: a size (32GiB) or a fraction of MemAvailable; 0: none")
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->callback([o, exit_code] { *exit_code = Plan(*o); });
}

}  // namespace kvmesh::cli
