// kvmesh_logit_agreement: compares kvmesh's next-token predictions with
// llama.cpp's on the same model file, by teacher forcing.
//
// Input: the JSON that `llamacpp_peer.mjs topk --prompt P --steps S -k K`
// prints (prompt tokens, then at each of S greedy steps llama.cpp's argmax
// and its top-K tokens with log-probabilities). kvmesh runs the prompt plus
// llama.cpp's first S-1 argmax tokens in one pass (its logits do not depend on
// the batch; see worker/runtime/cpu/cpu_matmul.h) and, at every step,
// compares its own argmax with llama.cpp's and its log-probabilities of
// llama.cpp's top-K tokens with llama.cpp's.
//
//   kvmesh_logit_agreement -m MODEL --peer-json FILE [-t 2] [--kv-type f16]
//                          [--dump FILE]
//
// --dump writes kvmesh's log-probabilities of llama.cpp's top-K tokens, one
// JSON array per step, so two kvmesh configurations can be compared with
// each other as well as with llama.cpp.
// Prints one JSON line: steps, top1_agree, first_disagreement (-1 if none),
// max_abs_dlogprob and max_rel_dlogprob (|d| / |llama.cpp's logprob|) over
// the top-K tokens of every step.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <vector>

#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace {

int Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, peer_path, dump_path, kv_type = "f16";
  int threads = 2;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Fail("missing value for " + a);
    const std::string v = argv[++i];
    if (a == "-m") {
      model_path = v;
    } else if (a == "--peer-json") {
      peer_path = v;
    } else if (a == "-t") {
      threads = std::stoi(v);
    } else if (a == "--kv-type") {
      kv_type = v;
    } else if (a == "--dump") {
      dump_path = v;
    } else {
      return Fail(
          "usage: kvmesh_logit_agreement -m MODEL --peer-json FILE [-t N] [--kv-type T] [--dump "
          "FILE]");
    }
  }
  std::ifstream in(peer_path);
  if (!in) return Fail(peer_path + ": cannot read");
  const nlohmann::json peer = nlohmann::json::parse(in, nullptr, false);
  if (peer.is_discarded() || !peer.contains("steps"))
    return Fail(peer_path + ": not peer topk JSON");

  auto model = kvmesh::Model::Load(model_path);
  if (!model.ok()) return Fail(model.status().ToString());
  const kvmesh::ModelConfig& c = (*model)->config();
  auto type = kvmesh::ParseTensorType(kv_type);
  if (!type) return Fail("unknown --kv-type " + kv_type);

  std::vector<int32_t> tokens = peer["prompt_tokens"].get<std::vector<int32_t>>();
  const size_t n_prompt = tokens.size();
  const nlohmann::json& steps = peer["steps"];
  for (size_t s = 0; s + 1 < steps.size(); ++s) tokens.push_back(steps[s]["argmax"].get<int32_t>());

  kvmesh::KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, *type, *type};
  const int64_t blocks = (static_cast<int64_t>(tokens.size()) + 15) / 16;
  auto exec = kvmesh::ModelExecutor::CreateOnCpu(**model, layout, blocks, threads);
  if (!exec.ok()) return Fail(exec.status().ToString());
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  kvmesh::ForwardBatch batch;
  batch.tokens = tokens;
  batch.sequences.push_back(
      {0, static_cast<int32_t>(tokens.size()), 0, table, kvmesh::LogitsMode::kAll});
  kvmesh::ForwardOutput out;
  if (auto s = (*exec)->Forward(batch, &out); !s.ok()) return Fail(s.ToString());

  int agree = 0, first_disagreement = -1;
  double max_abs = 0, max_rel = 0;
  nlohmann::json dump = nlohmann::json::array();
  for (size_t s = 0; s < steps.size(); ++s) {
    const float* row = out.Row(static_cast<int64_t>(n_prompt - 1 + s));
    const int n = out.n_vocab;
    const int argmax = static_cast<int>(std::max_element(row, row + n) - row);
    if (argmax == steps[s]["argmax"].get<int>()) {
      ++agree;
    } else if (first_disagreement < 0) {
      first_disagreement = static_cast<int>(s);
    }
    const double m = row[argmax];
    double sum = 0;
    for (int i = 0; i < n; ++i) sum += std::exp(row[i] - m);
    const double lse = m + std::log(sum);
    nlohmann::json ours = nlohmann::json::array();
    for (const nlohmann::json& t : steps[s]["top"]) {
      const double theirs = t["logprob"].get<double>();
      const double d = std::fabs(row[t["token"].get<int>()] - lse - theirs);
      ours.push_back(row[t["token"].get<int>()] - lse);
      max_abs = std::max(max_abs, d);
      if (theirs != 0) max_rel = std::max(max_rel, d / std::fabs(theirs));
    }
    dump.push_back(std::move(ours));
  }
  if (!dump_path.empty()) {
    std::ofstream dump_out(dump_path);
    dump_out << dump.dump() << "\n";
    if (!dump_out) return Fail(dump_path + ": cannot write");
  }
  nlohmann::json result;
  result["steps"] = steps.size();
  result["top1_agree"] = agree;
  result["first_disagreement"] = first_disagreement;
  result["max_abs_dlogprob"] = max_abs;
  result["max_rel_dlogprob"] = max_rel;
  std::printf("%s\n", result.dump().c_str());
  return 0;
}
