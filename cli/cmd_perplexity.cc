// `kvmesh perplexity`: perplexity of a model on a text, in llama-perplexity's
// convention (worker/eval/perplexity.h), with any KV cache configuration, and
// KL divergence against a saved base run:
//
//   kvmesh perplexity -m M -f T -c 256 --save-logits base.logp    # f16 cache
//   kvmesh perplexity -m M -f T -c 256 --kv-type q4_0 --kl-base base.logp
//
// Per-chunk running PPL and the final estimate go to stdout as llama.cpp
// prints them; --json adds one JSON object as the last line.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/kv_options.h"
#include "cli/local_model.h"
#include "worker/eval/logprob_file.h"
#include "worker/eval/perplexity.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh::cli {
namespace {

struct PerplexityOptions {
  std::string model;
  std::string file;
  int ctx = 0;
  DeviceCliOptions devices;
  int chunks = 0;
  KvCliOptions kv;
  std::string kl_base;
  std::string save_logits;
  bool json = false;
};

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

// The base run must have evaluated exactly these tokens.
Status CheckBase(const LogProbHeader& base, const std::string& path, const PerplexityPlan& plan,
                 int n_vocab) {
  if (base.n_vocab != n_vocab) {
    return InvalidArgumentError(path + ": the base has a vocabulary of " +
                                std::to_string(base.n_vocab) + " tokens, this model " +
                                std::to_string(n_vocab));
  }
  if (base.n_ctx != plan.n_ctx || base.first != plan.first) {
    return InvalidArgumentError(path + ": the base was computed with -c " +
                                std::to_string(base.n_ctx) + ", this run uses -c " +
                                std::to_string(plan.n_ctx));
  }
  if (base.n_chunk < plan.n_chunk) {
    return InvalidArgumentError(path + ": the base has " + std::to_string(base.n_chunk) +
                                " chunks, this run needs " + std::to_string(plan.n_chunk) +
                                " (limit it with --chunks)");
  }
  return Status::Ok();
}

int Perplexity(const PerplexityOptions& o) {
  if (!o.kl_base.empty() && !o.save_logits.empty()) {
    return Fail(InvalidArgumentError("--kl-base and --save-logits exclude each other"));
  }
  auto local = LoadLocalModel(o.model);
  if (!local.ok()) return Fail(local.status());
  const Model& model = *local->model;
  const Tokenizer& tok = *local->tokenizer;
  const ModelConfig& config = model.config();
  auto text = ReadTextFile(o.file);
  if (!text.ok()) return Fail(text.status());

  const std::vector<int32_t> tokens = tok.Encode(*text, /*add_special=*/true, false);
  const int ctx = o.ctx > 0 ? o.ctx : std::min(config.n_ctx_train, 512);
  auto plan = PlanPerplexity(static_cast<int64_t>(tokens.size()), ctx);
  if (!plan.ok()) return Fail(plan.status());
  if (o.chunks > 0) plan->n_chunk = std::min(plan->n_chunk, o.chunks);
  auto layout = BuildKvLayout(o.kv, model);
  if (!layout.ok()) return Fail(layout.status());
  auto devices = BuildPlan(o.devices, model);
  if (!devices.ok()) return Fail(devices.status());
  int threads = 0;
  for (const DeviceShard& d : devices->devices) threads += d.threads;
  const int64_t blocks = (ctx + layout->block_size - 1) / layout->block_size;
  auto exec = ModelExecutor::Create(model, *layout, *devices, blocks);
  if (!exec.ok()) return Fail(exec.status());
  const int32_t bos = tok.config().add_bos ? tok.bos_id() : -1;
  const int n_vocab = config.n_vocab;

  std::unique_ptr<LogProbReader> base;
  if (!o.kl_base.empty()) {
    auto opened = LogProbReader::Open(o.kl_base);
    if (!opened.ok()) return Fail(opened.status());
    base = std::move(*opened);
    if (Status s = CheckBase(base->header(), o.kl_base, *plan, n_vocab); !s.ok()) return Fail(s);
  }
  std::unique_ptr<LogProbWriter> writer;
  if (!o.save_logits.empty()) {
    LogProbHeader header;
    header.n_vocab = n_vocab;
    header.n_ctx = plan->n_ctx;
    header.n_chunk = plan->n_chunk;
    header.first = plan->first;
    header.model_identity = model.identity();
    for (int c = 0; c < plan->n_chunk; ++c) {
      const std::vector<int32_t> chunk = ChunkTokens(tokens, *plan, c, bos);
      header.tokens.insert(header.tokens.end(), chunk.begin(), chunk.end());
    }
    auto created = LogProbWriter::Create(o.save_logits, header);
    if (!created.ok()) return Fail(created.status());
    writer = std::move(*created);
  }

  std::fprintf(stderr,
               "perplexity: %zu tokens, %d chunks of %d (%d scored each), KV %s (%zu bytes/token, "
               "%s rounding), %d threads, %s attention\n",
               tokens.size(), plan->n_chunk, ctx, plan->scored_per_chunk(),
               layout->TypeName().c_str(), layout->bytes_per_token(),
               layout->rounding == KvRounding::kReference ? "reference" : "min-error", threads,
               std::string(kernels::IsaName(kernels::ActiveIsa())).c_str());
  if (devices->num_devices() > 1)
    std::fprintf(stderr, "devices: %s\n", devices->ToString().c_str());
  const auto start = std::chrono::steady_clock::now();
  NllStats nll;
  KlStats kl;
  std::vector<float> logits, log_probs, base_log_probs;
  for (int c = 0; c < plan->n_chunk; ++c) {
    const std::vector<int32_t> chunk = ChunkTokens(tokens, *plan, c, bos);
    if (base) {
      const int32_t* base_tokens = base->header().tokens.data() + static_cast<size_t>(c) * ctx;
      if (!std::equal(chunk.begin(), chunk.end(), base_tokens)) {
        return Fail(InvalidArgumentError(o.kl_base + ": chunk " + std::to_string(c + 1) +
                                         " of the base has other tokens; use the same text, "
                                         "model vocabulary and -c"));
      }
      if (Status s = base->ReadChunk(&base_log_probs); !s.ok()) return Fail(s);
    }
    if (Status s = ChunkLogits(**exec, chunk, *plan, &logits); !s.ok()) return Fail(s);
    ScoreChunk(logits, chunk, *plan, n_vocab, base ? base_log_probs.data() : nullptr, &nll, &kl,
               &log_probs);
    if (writer) {
      if (Status s = writer->WriteChunk(log_probs); !s.ok()) return Fail(s);
    }
    std::printf("[%d]%.4f,", c + 1, nll.Ppl());
    std::fflush(stdout);
  }
  std::printf("\n");
  if (writer) {
    if (Status s = writer->Finish(); !s.ok()) return Fail(s);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("Final estimate: PPL = %.4f +/- %.5f\n", nll.Ppl(), nll.PplError());
  if (base) {
    std::printf("KL divergence against %s (%lld positions):\n", o.kl_base.c_str(),
                static_cast<long long>(kl.count()));
    std::printf("Mean    KLD: %10.6f ± %10.6f\n", kl.MeanKl(), kl.MeanKlError());
    std::printf("Maximum KLD: %10.6f\n", kl.MaxKl());
    std::printf("99.9%%   KLD: %10.6f\n", kl.KlQuantile(0.999));
    std::printf("Median  KLD: %10.6f\n", kl.KlQuantile(0.5));
    std::printf("Same top p: %6.3f ± %5.3f %%\n", 100.0 * kl.SameTop(), 100.0 * kl.SameTopError());
  }
  const int64_t evaluated = static_cast<int64_t>(plan->n_chunk) * ctx;
  std::fprintf(stderr, "perplexity: %d chunks in %.2f s (%.0f tokens/s)\n", plan->n_chunk, seconds,
               evaluated / std::max(seconds, 1e-9));
  if (o.json) {
    nlohmann::json j;
    j["ppl"] = nll.Ppl();
    j["ppl_error"] = nll.PplError();
    j["n_scored"] = nll.count();
    j["n_chunk"] = plan->n_chunk;
    j["ctx"] = ctx;
    j["kv"] = {
        {"type", layout->TypeName()},
        {"bytes_per_token", layout->bytes_per_token()},
        {"rounding", layout->rounding == KvRounding::kReference ? "reference" : "min-error"}};
    j["seconds"] = seconds;
    if (base) {
      j["kl_mean"] = kl.MeanKl();
      j["kl_mean_error"] = kl.MeanKlError();
      j["kl_max"] = kl.MaxKl();
      j["kl_p999"] = kl.KlQuantile(0.999);
      j["same_top_p"] = kl.SameTop();
      j["same_top_p_error"] = kl.SameTopError();
    }
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace

void RegisterPerplexityCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<PerplexityOptions>();
  CLI::App* cmd = app.add_subcommand(
      "perplexity", "Perplexity of a model on a text (llama-perplexity's convention)");
  cmd->add_option("-m,--model", o->model, "GGUF model (default: stories260K.gguf, see README)");
  cmd->add_option("-f,--file", o->file, "Text file to evaluate")->required();
  cmd->add_option("-c,--ctx", o->ctx,
                  "Tokens per chunk; the second half of each is scored (default: the model's "
                  "context, up to 512)")
      ->check(CLI::Range(4, 1 << 20));
  AddDeviceOptions(cmd, &o->devices);
  cmd->add_option("--chunks", o->chunks, "Evaluate at most this many chunks")
      ->check(CLI::PositiveNumber);
  AddKvOptions(cmd, &o->kv, /*with_transforms=*/true, /*with_memory=*/false);
  cmd->add_option("--save-logits", o->save_logits,
                  "Save the scored positions' log-probabilities as a KL base");
  cmd->add_option("--kl-base", o->kl_base,
                  "Report KL divergence and same-top rate against this --save-logits file");
  cmd->add_flag("--json", o->json,
                "Print {\"ppl\",\"n_scored\",\"kl_mean\",\"same_top_p\",...} as the last line");
  cmd->callback([o, exit_code] { *exit_code = Perplexity(*o); });
}

}  // namespace kvmesh::cli
