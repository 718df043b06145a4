// `kvmesh kv-calibrate`: measures the per-(layer, KV head, channel) mean of
// post-RoPE K over a text and writes it as a KV bias file (format in
// worker/kv/kv_bias.h) for `--kv-bias`, which centers K before it is
// quantized.
//
// The text is cut like perplexity's (chunks of -c tokens, each starting with
// BOS; a text shorter than one chunk is one chunk), every position of every
// chunk is run through the model with a plain f32 (or f16) cache, and K is
// read back from the pages.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <numeric>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/kv_options.h"
#include "cli/local_model.h"
#include "worker/eval/k_calibration.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh::cli {
namespace {

struct CalibrateOptions {
  std::string model;
  std::string file;
  std::string output;
  int ctx = 0;
  int threads = 0;
  std::string kv_type = "f32";
};

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

int Calibrate(const CalibrateOptions& o) {
  auto local = LoadLocalModel(o.model);
  if (!local.ok()) return Fail(local.status());
  const Model& model = *local->model;
  const Tokenizer& tok = *local->tokenizer;
  const ModelConfig& config = model.config();
  auto text = ReadTextFile(o.file);
  if (!text.ok()) return Fail(text.status());
  const std::vector<int32_t> tokens = tok.Encode(*text, /*add_special=*/true, false);
  if (tokens.size() < 2) {
    return Fail(InvalidArgumentError(o.file + ": too little text to calibrate on"));
  }

  KvCliOptions kv;
  kv.cache.type = o.kv_type;
  auto layout = BuildKvLayout(kv, model);
  if (!layout.ok()) return Fail(layout.status());
  auto accumulator = KMeanAccumulator::Create(*layout);
  if (!accumulator.ok()) return Fail(accumulator.status());

  const int ctx = std::min<int64_t>(o.ctx > 0 ? o.ctx : std::min(config.n_ctx_train, 512),
                                    static_cast<int64_t>(tokens.size()));
  const int n_chunk = static_cast<int>(tokens.size() / ctx);
  const int threads = o.threads > 0
                          ? o.threads
                          : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int64_t blocks = (ctx + layout->block_size - 1) / layout->block_size;
  auto exec = ModelExecutor::CreateOnCpu(model, *layout, blocks, threads);
  if (!exec.ok()) return Fail(exec.status());
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  const int32_t bos = tok.config().add_bos ? tok.bos_id() : -1;

  std::fprintf(stderr, "kv-calibrate: %zu tokens, %d chunks of %d, %s cache, %d threads\n",
               tokens.size(), n_chunk, ctx, layout->TypeName().c_str(), threads);
  const auto start = std::chrono::steady_clock::now();
  for (int c = 0; c < n_chunk; ++c) {
    ForwardBatch batch;
    batch.tokens.assign(tokens.begin() + static_cast<int64_t>(c) * ctx,
                        tokens.begin() + static_cast<int64_t>(c + 1) * ctx);
    if (bos >= 0) batch.tokens[0] = bos;
    batch.sequences.push_back({0, ctx, 0, table, LogitsMode::kNone});
    ForwardOutput out;
    if (Status s = (*exec)->Forward(batch, &out); !s.ok()) return Fail(s);
    if (Status s = accumulator->AddSequence(**exec, table, ctx); !s.ok()) return Fail(s);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  const std::shared_ptr<const KvBias> bias = accumulator->Finish(model.identity(), config.name);
  if (Status s = bias->Save(o.output); !s.ok()) return Fail(s);
  const std::vector<double> share = accumulator->MeanEnergyShare();
  std::printf("Share of K's mean square in its per-channel mean (what centering removes):\n");
  for (int layer = 0; layer < config.n_layer; ++layer) {
    std::printf("  layer %2d: %5.1f%%\n", layer, 100.0 * share[layer]);
  }
  std::printf(
      "wrote %s: %d layers x %d KV heads x %d channels from %llu positions of '%s' "
      "(%.2f s)\n",
      o.output.c_str(), config.n_layer, config.n_head_kv, config.head_dim,
      static_cast<unsigned long long>(accumulator->n_tokens()), config.name.c_str(), seconds);
  return 0;
}

}  // namespace

void RegisterKvCalibrateCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<CalibrateOptions>();
  CLI::App* cmd = app.add_subcommand(
      "kv-calibrate", "Measure the per-channel mean of K on a text, for --kv-bias (K centering)");
  cmd->add_option("-m,--model", o->model, "GGUF model (default: stories260K.gguf, see README)");
  cmd->add_option("-f,--file", o->file, "Calibration text")->required();
  cmd->add_option("-o,--output", o->output, "Bias file to write")->required();
  cmd->add_option("-c,--ctx", o->ctx, "Tokens per chunk (default: the model's context, up to 512)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("-t,--threads", o->threads, "CPU threads (default: all cores)");
  cmd->add_option("--kv-type", o->kv_type, "Cache type K is measured from: f32 or f16")
      ->capture_default_str();
  cmd->callback([o, exit_code] { *exit_code = Calibrate(*o); });
}

}  // namespace kvmesh::cli
