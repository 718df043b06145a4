// The cost of constrained decoding: decode throughput of the engine with
// and without a JSON-schema grammar on the same model, at 1 and 16 streams,
// alternating the two and quoting medians; and the cost of one token mask
// computed cold (no cache) along the constrained outputs.
//
//   build/bench/kvmesh_constrained_bench MODEL.gguf SCHEMA.json [--tokens 48] [--runs 3]
//
// bench/constrained_schema.json is nested (an array of objects with a
// string, an integer range, an enum and an array of booleans) and needs 500
// items, so no stream ends before --tokens and the batch stays the same size
// in both modes. Sampling at temperature 1 with a seed per stream. Last line: JSON.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <future>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/grammar/json_schema.h"
#include "common/tokenizer/tokenizer.h"
#include "worker/engine/engine.h"
#include "worker/engine/grammar_constraint.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

struct RunResult {
  double tokens_per_s = 0;
  std::vector<std::vector<int32_t>> outputs;
};

RunResult RunStreams(Engine& engine, const Tokenizer& tok, int streams, int tokens,
                     const std::optional<Constraint>& constraint, int run) {
  struct Sink {
    std::vector<int32_t> tokens;
    std::promise<void> done;
  };
  std::vector<std::shared_ptr<Sink>> sinks;
  const auto start = Clock::now();
  for (int s = 0; s < streams; ++s) {
    auto sink = std::make_shared<Sink>();
    sinks.push_back(sink);
    EngineRequest r;
    r.id = "r" + std::to_string(run) + "-" + std::to_string(s) + (constraint ? "c" : "u");
    r.prompt =
        tok.Encode("Write a list of pets as JSON. Pet " + std::to_string(s) + ":", true, false);
    // llama.cpp's defaults, set the same on its side.
    r.sampling.temperature = 1.0f;
    r.sampling.top_k = 40;
    r.sampling.top_p = 0.95f;
    r.sampling.min_p = 0.05f;
    r.sampling.seed = static_cast<uint64_t>(100 * run + s);
    r.sampling.max_tokens = tokens;
    r.sampling.ignore_eos = !constraint.has_value();
    r.cache_salt = r.id;  // no prefix hits between runs
    r.constraint = constraint;
    r.on_output = [sink](RequestOutput&& out) {
      sink->tokens.insert(sink->tokens.end(), out.tokens.begin(), out.tokens.end());
      if (out.finished) sink->done.set_value();
    };
    if (Status st = engine.Submit(std::move(r)); !st.ok()) {
      std::fprintf(stderr, "submit: %s\n", st.message().c_str());
      std::exit(1);
    }
  }
  RunResult result;
  int64_t total = 0;
  for (auto& sink : sinks) {
    sink->done.get_future().wait();
    total += static_cast<int64_t>(sink->tokens.size());
    result.outputs.push_back(sink->tokens);
  }
  result.tokens_per_s = total / std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

int Main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s MODEL.gguf SCHEMA.json [--tokens N] [--runs N]\n", argv[0]);
    return 2;
  }
  std::ifstream schema_file(argv[2]);
  const nlohmann::json schema = nlohmann::json::parse(schema_file, nullptr, false);
  if (schema.is_discarded()) return std::fprintf(stderr, "%s: not JSON\n", argv[2]), 1;
  int tokens = 48, runs = 3;
  for (int i = 3; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--tokens") tokens = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--runs") runs = std::atoi(argv[i + 1]);
  }
  auto model = Model::Load(argv[1]);
  if (!model.ok()) return std::fprintf(stderr, "%s\n", model.status().message().c_str()), 1;
  auto tc = TokenizerConfigFromGguf((*model)->file());
  if (!tc.ok()) return std::fprintf(stderr, "%s\n", tc.status().message().c_str()), 1;
  auto tok = Tokenizer::Create(std::move(*tc));
  if (!tok.ok()) return std::fprintf(stderr, "%s\n", tok.status().message().c_str()), 1;
  const ModelConfig& c = (*model)->config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto options = PlanOptions::Parse("", "", "", 2);
  auto exec = ModelExecutor::Create(**model, layout, *options, 2048);
  if (!exec.ok()) return std::fprintf(stderr, "%s\n", exec.status().message().c_str()), 1;
  EngineConfig config;
  config.model_identity = (*model)->identity();
  Engine engine(c, **tok, std::move(exec).value(), config);
  engine.Start();

  auto gbnf = grammar::JsonSchemaToGbnf(schema);
  if (!gbnf.ok()) return std::fprintf(stderr, "%s\n", gbnf.status().message().c_str()), 1;
  GrammarConstraints constraints(**tok);
  auto constraint = constraints.Get(*gbnf, {});
  if (!constraint.ok())
    return std::fprintf(stderr, "%s\n", constraint.status().message().c_str()), 1;

  nlohmann::json report;
  report["model"] = argv[1];
  report["n_vocab"] = c.n_vocab;
  report["tokens_per_stream"] = tokens;
  std::vector<std::vector<int32_t>> constrained_outputs;
  for (int streams : {1, 16}) {
    std::vector<double> plain, masked;
    for (int run = 0; run < runs; ++run) {  // alternate the two
      plain.push_back(RunStreams(engine, **tok, streams, tokens, std::nullopt, run).tokens_per_s);
      RunResult r = RunStreams(engine, **tok, streams, tokens, *constraint, run);
      masked.push_back(r.tokens_per_s);
      if (streams == 16 && run == 0) constrained_outputs = r.outputs;
    }
    const double p = Median(plain), m = Median(masked);
    std::printf(
        "%2d streams: unconstrained %.1f tok/s, constrained %.1f tok/s (median of %d), "
        "constrained/unconstrained %.3f\n",
        streams, p, m, runs, m / p);
    report["streams_" + std::to_string(streams)] = {
        {"unconstrained_tokens_per_s", p}, {"constrained_tokens_per_s", m}, {"ratio", m / p}};
  }
  std::printf("mask cache: %zu hits, %zu misses\n", constraint->masks->hits(),
              constraint->masks->misses());

  // Cold masks: every state the constrained outputs passed through, with no
  // cache, timed one by one.
  std::vector<double> cold_ms;
  for (const auto& output : constrained_outputs) {
    grammar::GrammarMatcher matcher(constraint->grammar);
    for (int32_t id : output) {
      const auto t0 = Clock::now();
      const grammar::TokenMask mask =
          grammar::ComputeMask(*constraint->grammar, *constraint->vocabulary, matcher.stacks());
      cold_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      if (!grammar::MaskAllows(mask, id) || !matcher.Accept(constraint->vocabulary->piece(id))) {
        std::fprintf(stderr, "an output token the grammar does not allow\n");
        return 1;
      }
    }
  }
  std::sort(cold_ms.begin(), cold_ms.end());
  const double median = cold_ms[cold_ms.size() / 2], p90 = cold_ms[cold_ms.size() * 9 / 10],
               max = cold_ms.back();
  std::printf("cold mask (no cache), %zu states: median %.2f ms, p90 %.2f ms, max %.2f ms\n",
              cold_ms.size(), median, p90, max);
  report["cold_mask_ms"] = {
      {"median", median}, {"p90", p90}, {"max", max}, {"states", cold_ms.size()}};
  report["mask_cache"] = {{"hits", constraint->masks->hits()},
                          {"misses", constraint->masks->misses()}};
  std::printf("%s\n", report.dump().c_str());
  engine.Stop();
  return 0;
}

}  // namespace
}  // namespace kvmesh

int main(int argc, char** argv) { return kvmesh::Main(argc, argv); }
