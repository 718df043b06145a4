// `kvmesh run`: generate text from a prompt on the local CPU, streaming it to
// stdout as it is produced.
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "cli/device_options.h"
#include "cli/kv_options.h"
#include "common/grammar/json_schema.h"
#include "common/model_path.h"
#include "common/tokenizer/streaming_detokenizer.h"
#include "common/tokenizer/tokenizer.h"
#include "worker/engine/grammar_constraint.h"
#include "worker/kv/kv_memory_fit.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"
#include "worker/sampling/sampler.h"
#include "worker/sampling/stop_matcher.h"

namespace kvmesh::cli {
namespace {

struct RunOptions {
  std::string model;
  std::string prompt;
  int n_predict = 128;
  float temperature = 0.8f;
  int top_k = 40;
  float top_p = 0.95f;
  float min_p = 0.05f;
  float repeat_penalty = 1.0f;
  int64_t seed = -1;
  DeviceCliOptions devices;
  int ctx = 0;
  int batch = 512;
  std::vector<std::string> stop;
  std::string grammar_file;
  std::string json_schema_file;
  KvCliOptions kv;
  bool no_bos = false;
  bool json = false;
  bool verify_sha256 = false;
};

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

int Run(const RunOptions& o) {
  auto path = ResolveModelPath(o.model);
  if (!path.ok()) return Fail(path.status());
  ModelLoadOptions load_options;
  load_options.require_sha256 = o.verify_sha256;
  auto model = Model::Load(*path, load_options);
  if (!model.ok()) return Fail(model.status());
  const ModelConfig& config = (*model)->config();
  auto tok_config = TokenizerConfigFromGguf((*model)->file());
  if (!tok_config.ok()) return Fail(tok_config.status());
  auto tokenizer = Tokenizer::Create(std::move(*tok_config));
  if (!tokenizer.ok()) return Fail(tokenizer.status());
  const Tokenizer& tok = **tokenizer;

  SamplingParams sp;
  sp.temperature = o.temperature;
  sp.top_k = o.top_k;
  sp.top_p = o.top_p;
  sp.min_p = o.min_p;
  sp.repeat_penalty = o.repeat_penalty;
  if (o.seed >= 0) sp.seed = static_cast<uint64_t>(o.seed);
  sp.max_tokens = o.n_predict;
  sp.stop = o.stop;
  if (Status s = sp.Validate(); !s.ok()) return Fail(s);

  std::vector<int32_t> prompt = tok.Encode(o.prompt, !o.no_bos, false);
  if (prompt.empty())
    return Fail(InvalidArgumentError("the prompt is empty (and no BOS is added)"));
  const int ctx = o.ctx > 0 ? o.ctx : std::min(config.n_ctx_train, 4096);
  if (static_cast<int>(prompt.size()) >= ctx) {
    return Fail(InvalidArgumentError("the prompt has " + std::to_string(prompt.size()) +
                                     " tokens, which does not fit the context of " +
                                     std::to_string(ctx) + " (-c)"));
  }
  auto layout = BuildKvLayout(o.kv, **model);
  if (!layout.ok()) return Fail(layout.status());
  auto plan = BuildPlan(o.devices, **model);
  if (!plan.ok()) return Fail(plan.status());
  // Without --kv-memory the cache holds exactly one context.
  int64_t blocks = (ctx + layout->block_size - 1) / layout->block_size;
  if (!o.kv.memory.empty()) {
    auto fit = FitKvBlocksOnDevices(o.kv.memory, *layout, *plan, ctx);
    if (!fit.ok()) return Fail(fit.status());
    blocks = fit->num_blocks;
  }
  int threads = 0;
  for (const DeviceShard& d : plan->devices) threads += d.threads;
  auto exec = ModelExecutor::Create(**model, *layout, *plan, blocks);
  if (!exec.ok()) return Fail(exec.status());
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);

  // Constrained decoding (--grammar / --json-schema).
  std::optional<Constraint> constraint;
  std::optional<grammar::GrammarMatcher> matcher;
  std::vector<float> masked;
  if (!o.grammar_file.empty() && !o.json_schema_file.empty()) {
    return Fail(InvalidArgumentError("give --grammar or --json-schema, not both"));
  }
  if (!o.grammar_file.empty() || !o.json_schema_file.empty()) {
    const std::string& file = o.grammar_file.empty() ? o.json_schema_file : o.grammar_file;
    std::ifstream in(file, std::ios::binary);
    if (!in) return Fail(NotFoundError(file + ": cannot open"));
    std::stringstream text;
    text << in.rdbuf();
    std::string gbnf = text.str();
    if (!o.json_schema_file.empty()) {
      auto schema = nlohmann::json::parse(gbnf, nullptr, /*allow_exceptions=*/false);
      if (schema.is_discarded()) return Fail(InvalidArgumentError(file + ": not valid JSON"));
      auto converted = grammar::JsonSchemaToGbnf(schema);
      if (!converted.ok()) return Fail(converted.status().WithPrefix(file));
      gbnf = std::move(converted).value();
    }
    GrammarConstraints constraints(tok);  // the constraint holds what it needs
    auto got = constraints.Get(gbnf, {});
    if (!got.ok()) return Fail(got.status().WithPrefix(file));
    constraint = std::move(got).value();
    matcher.emplace(constraint->grammar);
  }

  Sampler sampler(sp, config.n_vocab);
  StopMatcher stops(sp.stop);
  StreamingDetokenizer detok(tok, {});
  std::vector<int32_t> history = prompt;
  std::vector<int32_t> generated;
  std::string text;
  auto emit = [&](const std::string& piece) {
    if (piece.empty()) return;
    text += piece;
    if (!o.json) {
      std::fwrite(piece.data(), 1, piece.size(), stdout);
      std::fflush(stdout);
    }
  };

  // Prefill in chunks of --batch tokens, then decode one token per step.
  const auto t0 = Clock::now();
  ForwardOutput out;
  int32_t pos = 0;
  while (pos < static_cast<int32_t>(prompt.size())) {
    const int32_t n = std::min<int32_t>(o.batch, static_cast<int32_t>(prompt.size()) - pos);
    ForwardBatch batch;
    batch.tokens.assign(prompt.begin() + pos, prompt.begin() + pos + n);
    batch.sequences.push_back({0, n, pos, table, LogitsMode::kLast});
    if (Status s = (*exec)->Forward(batch, &out); !s.ok()) return Fail(s);
    pos += n;
  }
  const auto t1 = Clock::now();
  std::string finish = "length";
  while (static_cast<int>(generated.size()) < sp.max_tokens) {
    const float* logits = out.Row(0);
    if (matcher) {
      if (!MaskLogits(*constraint, *matcher, logits, config.n_vocab, &masked)) {
        return Fail(InvalidArgumentError("no token of the vocabulary continues the grammar"));
      }
      logits = masked.data();
    }
    const int32_t next = sampler.Sample(logits, history);
    if (tok.IsEndOfGeneration(next)) {
      finish = "stop";
      break;
    }
    if (matcher) matcher->Accept(constraint->vocabulary->piece(next));
    generated.push_back(next);
    history.push_back(next);
    emit(stops.Push(detok.Feed(next)));
    if (stops.stopped()) {
      finish = "stop";
      break;
    }
    if (pos >= ctx) {
      finish = "context";
      break;
    }
    if (static_cast<int>(generated.size()) == sp.max_tokens) break;
    ForwardBatch batch;
    batch.tokens = {next};
    batch.sequences.push_back({0, 1, pos, table, LogitsMode::kLast});
    if (Status s = (*exec)->Forward(batch, &out); !s.ok()) return Fail(s);
    ++pos;
  }
  if (!stops.stopped()) emit(stops.Push(detok.Flush()) + stops.Flush());
  const auto t2 = Clock::now();

  const double pp_s = Seconds(t0, t1), tg_s = Seconds(t1, t2);
  const double pp_tps = prompt.size() / std::max(pp_s, 1e-9);
  const double tg_tps = generated.size() / std::max(tg_s, 1e-9);
  if (o.json) {
    nlohmann::json j;
    j["prompt_tokens"] = prompt;
    j["tokens"] = generated;
    j["text"] = text;
    j["finish_reason"] = finish;
    j["seed"] = sampler.seed();
    j["kv"] = {{"type", layout->TypeName()},
               {"bytes_per_token", layout->bytes_per_token()},
               {"blocks", blocks},
               {"block_size", layout->block_size}};
    j["timings"] = {{"prompt_tokens_per_s", pp_tps},
                    {"gen_tokens_per_s", tg_tps},
                    {"prompt_ms", pp_s * 1e3},
                    {"gen_ms", tg_s * 1e3}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    std::printf("\n");
    std::fprintf(
        stderr,
        "\n[%s] prompt: %zu tokens, %.1f tokens/s | generated: %zu tokens, %.1f tokens/s | "
        "finish: %s | seed %llu | %d threads | KV %s, %zu B/token, %lld blocks\n",
        config.name.c_str(), prompt.size(), pp_tps, generated.size(), tg_tps, finish.c_str(),
        static_cast<unsigned long long>(sampler.seed()), threads, layout->TypeName().c_str(),
        layout->bytes_per_token(), static_cast<long long>(blocks));
  }
  return 0;
}

}  // namespace

void RegisterRunCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* run = app.add_subcommand("run", "Generate text from a prompt on this machine's CPU");
  run->add_option("-m,--model", o->model, "GGUF model (default: stories260K.gguf, see README)");
  run->add_option("-p,--prompt", o->prompt, "Prompt text")->required();
  run->add_option("-n,--n-predict", o->n_predict, "Maximum tokens to generate")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--temp", o->temperature, "Temperature (0 = greedy)");
  run->add_option("--top-k", o->top_k, "Top-k (0 = off)");
  run->add_option("--top-p", o->top_p, "Top-p (1 = off)");
  run->add_option("--min-p", o->min_p, "Min-p (0 = off)");
  run->add_option("--repeat-penalty", o->repeat_penalty, "Repetition penalty (1 = off)");
  run->add_option("--seed", o->seed, "Random seed (default: random)");
  run->add_option("--stop", o->stop, "Stop string (repeatable)");
  run->add_option("--grammar", o->grammar_file,
                  "Constrain the output to this GBNF grammar file (llama.cpp's syntax)");
  run->add_option("--json-schema", o->json_schema_file,
                  "Constrain the output to JSON instances of this JSON Schema file");
  AddDeviceOptions(run, &o->devices);
  run->add_option("-c,--ctx", o->ctx, "Context size in tokens (default: the model's, up to 4096)");
  run->add_option("-b,--batch", o->batch, "Prompt tokens per forward step")
      ->check(CLI::PositiveNumber);
  AddKvOptions(run, &o->kv, /*with_transforms=*/true, /*with_memory=*/true);
  run->add_flag("--no-bos", o->no_bos, "Do not add BOS even if the model asks for it");
  run->add_flag("--verify-sha256", o->verify_sha256,
                "Require MODEL.sha256 to match before loading");
  run->add_flag("--json", o->json,
                "Print one JSON object with tokens, text and timings at the end");
  run->callback([o, exit_code] { *exit_code = Run(*o); });
}

}  // namespace kvmesh::cli
