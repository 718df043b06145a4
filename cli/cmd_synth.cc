// `kvmesh synth`: writes a llama-family GGUF with the shape of a real model,
// random weights in llama.cpp's type mix, and a real tokenizer copied from a
// vocab GGUF (worker/model/synthetic_model.h):
//
//   kvmesh synth --shape llama-1b --type q4_k_m -o llama-1b-q4_k_m.gguf
//   kvmesh synth --shape tinyllama-1.1b --type q8_0 --vocab V.gguf -o t.gguf
//   kvmesh synth --shape tiny-qwen3 --type q8_0 -o tiny-qwen3.gguf
//   kvmesh synth --shape llama-1b --chat-template T.jinja -o l.gguf
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>

#include "cli/commands.h"
#include "common/model_path.h"
#include "worker/model/synthetic_model.h"

namespace kvmesh::cli {
namespace {

struct SynthOptions {
  std::string shape = "llama-1b";
  std::string type = "q4_0";
  std::string vocab;
  std::string chat_template;
  std::string output;
  uint64_t seed = 1;
  int threads = 0;
};

int Fail(const Status& status) {
  std::fprintf(stderr, "error: %s\n", status.message().c_str());
  return 1;
}

// A file of the shared directory (the shape's default vocab or template),
// looked for beside each model directory (../shared/vocab next to
// ../shared/models).
StatusOr<std::string> SharedFile(const SyntheticShape& shape, const std::string& relative,
                                 std::string_view what, std::string_view flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string searched;
  for (const std::string& dir : ModelSearchDirs()) {
    const fs::path candidate = fs::path(dir) / ".." / relative;
    if (fs::is_regular_file(candidate, ec)) return fs::weakly_canonical(candidate, ec).string();
    searched += "\n  " + candidate.string();
  }
  return NotFoundError("shape " + shape.name + " takes its " + std::string(what) + " from " +
                       relative + ", which was not found (pass " + std::string(flag) +
                       " FILE); searched:" + searched);
}

StatusOr<std::string> ReadTextFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFoundError(path + ": cannot open the chat template");
  std::stringstream text;
  text << in.rdbuf();
  if (text.str().empty()) return InvalidArgumentError(path + ": the chat template is empty");
  return text.str();
}

int Synth(const SynthOptions& o) {
  const std::optional<SyntheticShape> shape = FindSyntheticShape(o.shape);
  if (!shape) {
    std::string names;
    for (const std::string& n : SyntheticShapeNames()) names += (names.empty() ? "" : ", ") + n;
    return Fail(InvalidArgumentError("unknown --shape " + o.shape + " (known: " + names + ")"));
  }
  const std::optional<SyntheticMix> mix = ParseSyntheticMix(o.type);
  if (!mix) {
    return Fail(InvalidArgumentError(
        "unknown --type " + o.type +
        " (f16, q8_0, q4_0, q4_k_m, q5_k_m, q3_k_m, q2_k, iq4_nl, iq4_xs, iq3_s)"));
  }
  SynthesizeOptions options;
  options.shape = *shape;
  options.mix = *mix;
  options.output_path = o.output;
  options.seed = o.seed;
  std::string template_path = o.chat_template;
  if (template_path.empty() && !shape->default_chat_template.empty()) {
    auto found =
        SharedFile(*shape, shape->default_chat_template, "chat template", "--chat-template");
    if (!found.ok()) return Fail(found.status());
    template_path = *found;
  }
  if (!template_path.empty()) {
    auto text = ReadTextFile(template_path);
    if (!text.ok()) return Fail(text.status());
    options.chat_template = std::move(text).value();
  }
  if (o.vocab.empty()) {
    auto vocab = SharedFile(*shape, shape->default_vocab, "tokenizer", "--vocab");
    if (!vocab.ok()) return Fail(vocab.status());
    options.vocab_path = *vocab;
  } else {
    options.vocab_path = o.vocab;
  }
  const int threads = o.threads > 0 ? o.threads : std::max(1u, std::thread::hardware_concurrency());
  ThreadPool pool(threads);
  const auto start = std::chrono::steady_clock::now();
  auto report = SynthesizeModel(options, pool);
  if (!report.ok()) return Fail(report.status());
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%s: %s %s, vocab %lld (%s), %lld tensors, %.3f B params, %.1f MiB, seed %llu "
      "(%.1f s)\n",
      o.output.c_str(), shape->name.c_str(), o.type.c_str(),
      static_cast<long long>(report->n_vocab), options.vocab_path.c_str(),
      static_cast<long long>(report->num_tensors), report->num_params / 1e9,
      report->file_bytes / 1048576.0, static_cast<unsigned long long>(o.seed), seconds);
  return 0;
}

}  // namespace

void RegisterSynthCommand(CLI::App& app, int* exit_code) {
  auto o = std::make_shared<SynthOptions>();
  CLI::App* cmd = app.add_subcommand(
      "synth", "Write a GGUF of a real model's shape with random weights and a real tokenizer");
  std::string shapes;
  for (const std::string& name : SyntheticShapeNames())
    shapes += (shapes.empty() ? "" : ", ") + name;
  cmd->add_option("--shape", o->shape, "Model shape: " + shapes)->capture_default_str();
  cmd->add_option("--type", o->type,
                  "Type mix: f16, q8_0, q4_0, q4_k_m, q5_k_m, q3_k_m, q2_k, iq4_nl, iq4_xs, iq3_s")
      ->capture_default_str();
  cmd->add_option("--vocab", o->vocab,
                  "GGUF to copy the tokenizer from (default: the shape's, from ../shared/vocab)");
  cmd->add_option("--chat-template", o->chat_template,
                  "Jinja chat template to write into the file (default: the shape's, else the "
                  "vocab's)");
  cmd->add_option("-o,--output", o->output, "File to write")->required();
  cmd->add_option("--seed", o->seed, "Random seed")->capture_default_str();
  cmd->add_option("-t,--threads", o->threads, "Threads (default: all cores)");
  cmd->callback([o, exit_code] { *exit_code = Synth(*o); });
}

}  // namespace kvmesh::cli
