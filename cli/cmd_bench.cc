// `kvmesh bench`: prompt-processing and generation speed on this CPU, in the
// manner of llama-bench:
//
//   pp N  one forward pass over N prompt tokens into an empty sequence
//         (logits of the last token only);
//   tg N  N single-token decode steps from an empty sequence, each feeding
//         back the argmax of the last logits.
//
// One warm-up run, then R timed repetitions of each; tokens/s are reported as
// mean ± standard deviation and median, and --json prints one JSON object as
// the last line (medians as pp_tokens_per_s / tg_tokens_per_s). The weights
// read per generated token are printed too: with a measured memory bandwidth
// they give the decode roofline (bench/cpu_vs_llamacpp.sh).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/kv_options.h"
#include "common/model_path.h"
#include "worker/kernels/cpu/cpu_features.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh::cli {
namespace {

struct BenchOptions {
  std::string model;
  int prompt = 512;
  int generate = 128;
  DeviceCliOptions devices;
  int repetitions = 5;
  bool json = false;
  KvCliOptions kv;
};

struct Stats {
  std::vector<double> runs;  // tokens/s of each repetition
  double mean = 0, stddev = 0, median = 0;

  void Finish() {
    if (runs.empty()) return;
    mean = std::accumulate(runs.begin(), runs.end(), 0.0) / runs.size();
    double var = 0;
    for (double r : runs) var += (r - mean) * (r - mean);
    stddev = runs.size() > 1 ? std::sqrt(var / (runs.size() - 1)) : 0.0;
    std::vector<double> sorted = runs;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    median = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  }
};

using Clock = std::chrono::steady_clock;

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

class Runner {
 public:
  Runner(ModelExecutor& exec, int n_vocab, int64_t blocks) : exec_(exec), n_vocab_(n_vocab) {
    table_.resize(blocks);
    std::iota(table_.begin(), table_.end(), 0);
  }

  // Seconds for one pass over `n` prompt tokens at positions 0..n-1.
  StatusOr<double> Prompt(int n) {
    ForwardBatch batch;
    for (int i = 0; i < n; ++i) batch.tokens.push_back(3 + (i * 7919) % (n_vocab_ - 3));
    batch.sequences.push_back({0, n, 0, table_, LogitsMode::kLast});
    const auto start = Clock::now();
    RETURN_IF_ERROR(exec_.Forward(batch, &out_));
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

  // Seconds for `n` greedy decode steps from position 0.
  StatusOr<double> Generate(int n) {
    int32_t token = 1 % n_vocab_;
    const auto start = Clock::now();
    for (int i = 0; i < n; ++i) {
      ForwardBatch batch;
      batch.tokens = {token};
      batch.sequences.push_back({0, 1, i, table_, LogitsMode::kLast});
      RETURN_IF_ERROR(exec_.Forward(batch, &out_));
      const float* logits = out_.Row(0);
      token = static_cast<int32_t>(std::max_element(logits, logits + out_.n_vocab) - logits);
    }
    return std::chrono::duration<double>(Clock::now() - start).count();
  }

 private:
  ModelExecutor& exec_;
  int n_vocab_;
  std::vector<int32_t> table_;
  ForwardOutput out_;
};

int Bench(const BenchOptions& o) {
  auto path = ResolveModelPath(o.model);
  if (!path.ok()) return Fail(path.status());
  auto model = Model::Load(*path);
  if (!model.ok()) return Fail(model.status());
  const ModelConfig& config = (*model)->config();
  if (config.n_vocab < 4) return Fail(InvalidArgumentError("the vocabulary is too small"));
  auto layout = BuildKvLayout(o.kv, **model);
  if (!layout.ok()) return Fail(layout.status());
  const int ctx = std::max(o.prompt, o.generate + 1) + 16;
  const int64_t blocks = (ctx + layout->block_size - 1) / layout->block_size;
  auto plan = BuildPlan(o.devices, **model);
  if (!plan.ok()) return Fail(plan.status());
  int threads = 0;
  for (const DeviceShard& d : plan->devices) threads += d.threads;
  const auto load_start = Clock::now();
  auto exec = ModelExecutor::Create(**model, *layout, *plan, blocks);
  if (!exec.ok()) return Fail(exec.status());
  const double setup_s = std::chrono::duration<double>(Clock::now() - load_start).count();
  Runner runner(**exec, config.n_vocab, blocks);

  // Warm-up: page in the weights, size the scratch buffers. Up to 1024
  // tokens: a long context's quadratic attention would double the run for
  // nothing.
  if (o.prompt > 0) {
    if (auto s = runner.Prompt(std::min(o.prompt, 1024)); !s.ok()) return Fail(s.status());
  }
  if (o.generate > 0) {
    if (auto s = runner.Generate(std::min(o.generate, 4)); !s.ok()) return Fail(s.status());
  }
  // The share of each test's time the devices spend in collectives (their
  // mean), from the executor's counters around the timed runs.
  auto comm_seconds = [&] {
    double sum = 0.0;
    for (const DeviceCounters& c : (*exec)->Counters()) sum += c.comm_seconds;
    return sum / plan->num_devices();
  };
  Stats pp, tg;
  double pp_seconds = 0.0, tg_seconds = 0.0, pp_comm = 0.0, tg_comm = 0.0;
  for (int r = 0; r < o.repetitions; ++r) {
    if (o.prompt > 0) {
      const double before = comm_seconds();
      auto s = runner.Prompt(o.prompt);
      if (!s.ok()) return Fail(s.status());
      pp.runs.push_back(o.prompt / *s);
      pp_seconds += *s;
      pp_comm += comm_seconds() - before;
    }
    if (o.generate > 0) {
      const double before = comm_seconds();
      auto s = runner.Generate(o.generate);
      if (!s.ok()) return Fail(s.status());
      tg.runs.push_back(o.generate / *s);
      tg_seconds += *s;
      tg_comm += comm_seconds() - before;
    }
  }
  const double pp_comm_share = pp_seconds > 0 ? pp_comm / pp_seconds : 0.0;
  const double tg_comm_share = tg_seconds > 0 ? tg_comm / tg_seconds : 0.0;
  pp.Finish();
  tg.Finish();

  uint64_t params = 0;
  for (const auto& t : (*model)->file().tensors()) params += t.num_elements;
  const uint64_t bytes_per_token = (*model)->weights().BytesPerToken();
  const std::string isa(kernels::IsaName(kernels::ActiveIsa()));
  // The AVX-512 tier's prefill kernels use the AMX tile unit where present.
  const bool amx = kernels::ActiveIsa() == kernels::Isa::kAvx512 && kernels::HasAmx();
  std::printf("model: %s (%s), %.1f MiB, %.3f B params, weights read per token %.1f MiB\n",
              path->c_str(), config.name.c_str(), (*model)->file().file_size() / 1048576.0,
              params / 1e9, bytes_per_token / 1048576.0);
  std::printf("cpu: %s kernels%s, %d threads, KV %s, setup %.2f s\n", isa.c_str(),
              amx ? " with AMX tiles" : "", threads, layout->TypeName().c_str(), setup_s);
  std::printf("devices: %s\n", plan->ToString().c_str());
  const bool split = plan->split == SplitKind::kTensor;
  std::printf("| test   |        t/s (mean ± sd) |   median | runs |%s\n", split ? " comm |" : "");
  auto row = [split](const char* kind, int n, const Stats& s, double comm_share) {
    if (s.runs.empty()) return;
    char test[32];
    std::snprintf(test, sizeof test, "%s%d", kind, n);
    std::printf("| %-6s | %12.2f ± %8.2f | %8.2f | %4zu |", test, s.mean, s.stddev, s.median,
                s.runs.size());
    if (split) std::printf(" %3.0f%% |", 100.0 * comm_share);
    std::printf("\n");
  };
  row("pp", o.prompt, pp, pp_comm_share);
  row("tg", o.generate, tg, tg_comm_share);
  if (o.json) {
    nlohmann::json j;
    j["model"] = *path;
    j["threads"] = threads;
    j["isa"] = isa;
    j["amx"] = amx;
    j["kv_type"] = layout->TypeName();
    j["n_prompt"] = o.prompt;
    j["n_gen"] = o.generate;
    j["bytes_per_token"] = bytes_per_token;
    j["pp_runs"] = pp.runs;
    j["tg_runs"] = tg.runs;
    j["pp_mean"] = pp.mean;
    j["tg_mean"] = tg.mean;
    j["pp_tokens_per_s"] = pp.median;
    j["tg_tokens_per_s"] = tg.median;
    j["devices"] = plan->num_devices();
    j["split"] = std::string(SplitKindName(plan->split));
    j["pp_comm_share"] = pp_comm_share;
    j["tg_comm_share"] = tg_comm_share;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace

void RegisterBenchCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<BenchOptions>();
  CLI::App* cmd =
      app.add_subcommand("bench", "Measure prompt-processing and generation tokens/s on this CPU");
  cmd->add_option("-m,--model", o->model, "GGUF model (default: stories260K.gguf)");
  cmd->add_option("-p,--n-prompt", o->prompt, "Prompt tokens per pp test (0: skip)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  cmd->add_option("-n,--n-gen", o->generate, "Tokens per tg test (0: skip)")
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  AddDeviceOptions(cmd, &o->devices);
  cmd->add_option("-r,--repetitions", o->repetitions, "Timed repetitions of each test")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print one JSON object with the results as the last line");
  AddKvOptions(cmd, &o->kv, /*with_transforms=*/false, /*with_memory=*/false);
  cmd->callback([o, exit_code] { *exit_code = Bench(*o); });
}

}  // namespace kvmesh::cli
