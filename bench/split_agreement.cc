// kvmesh_split_agreement: how closely a model split over CPU devices follows
// the same model on one device, by teacher forcing.
//
// Runs N tokens (a text tokenized with the model's own tokenizer, or
// pseudo-random tokens) through one device and through each requested plan,
// in prefill chunks of --chunk tokens, keeping every position's logits, and
// prints one JSON line per plan: positions, top-1 agreement with one device,
// whether every logit is bit-identical, the largest |Δ logit|, and at the
// positions where the top-1 differs, the largest margin by which one device
// preferred its own top-1 to the split's (near ties flip; clear choices must
// not).
//
//   kvmesh_split_agreement -m MODEL [-n 512] [--chunk 128] [--text FILE]
//                          [--plans "cpu:0,cpu:1/layer cpu:0,cpu:1/tensor"]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace {

using namespace kvmesh;

int Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

StatusOr<std::vector<float>> AllLogits(const Model& model, const std::string& devices,
                                       const std::string& split, const std::vector<int32_t>& tokens,
                                       int chunk) {
  const ModelConfig& c = model.config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  ASSIGN_OR_RETURN(PlanOptions options, PlanOptions::Parse(devices, split, "", 1));
  const int64_t blocks = (static_cast<int64_t>(tokens.size()) + 15) / 16;
  ASSIGN_OR_RETURN(std::unique_ptr<ModelExecutor> exec,
                   ModelExecutor::Create(model, layout, options, blocks));
  std::vector<int32_t> table(blocks);
  std::iota(table.begin(), table.end(), 0);
  std::vector<float> all;
  for (size_t start = 0; start < tokens.size(); start += chunk) {
    const int32_t n = static_cast<int32_t>(std::min<size_t>(chunk, tokens.size() - start));
    ForwardBatch batch;
    batch.tokens.assign(tokens.begin() + start, tokens.begin() + start + n);
    batch.sequences.push_back({0, n, static_cast<int32_t>(start), table, LogitsMode::kAll});
    ForwardOutput out;
    RETURN_IF_ERROR(exec->Forward(batch, &out));
    all.insert(all.end(), out.logits.begin(), out.logits.end());
  }
  return all;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path, text_path;
  std::string plans = "cpu:0,cpu:1/layer cpu:0,cpu:1/tensor";
  int n = 512, chunk = 128;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return Fail("missing value for " + a);
    const std::string v = argv[++i];
    if (a == "-m") {
      model_path = v;
    } else if (a == "-n") {
      n = std::stoi(v);
    } else if (a == "--chunk") {
      chunk = std::stoi(v);
    } else if (a == "--text") {
      text_path = v;
    } else if (a == "--plans") {
      plans = v;
    } else {
      return Fail(
          "usage: kvmesh_split_agreement -m MODEL [-n N] [--chunk C] [--text FILE] "
          "[--plans \"DEVICES/SPLIT ...\"]");
    }
  }
  if (n < 2 || chunk < 1) return Fail("-n must be at least 2 and --chunk at least 1");
  auto model = Model::Load(model_path);
  if (!model.ok()) return Fail(model.status().ToString());
  const ModelConfig& c = (*model)->config();

  std::vector<int32_t> tokens;
  if (!text_path.empty()) {
    std::ifstream in(text_path);
    if (!in) return Fail(text_path + ": cannot read");
    std::stringstream text;
    text << in.rdbuf();
    auto tc = TokenizerConfigFromGguf((*model)->file());
    if (!tc.ok()) return Fail(tc.status().ToString());
    auto tok = Tokenizer::Create(std::move(*tc));
    if (!tok.ok()) return Fail(tok.status().ToString());
    tokens = (*tok)->Encode(text.str(), true, false);
    if (static_cast<int>(tokens.size()) < n) return Fail(text_path + ": fewer tokens than -n");
    tokens.resize(n);
  } else {
    uint32_t x = 7;
    for (int i = 0; i < n; ++i) {
      x = x * 1664525u + 1013904223u;
      tokens.push_back(2 + static_cast<int32_t>((x >> 8) % static_cast<uint32_t>(c.n_vocab - 2)));
    }
  }
  auto base = AllLogits(**model, "", "", tokens, chunk);
  if (!base.ok()) return Fail(base.status().ToString());

  std::istringstream list(plans);
  std::string item;
  while (list >> item) {
    const size_t slash = item.find('/');
    if (slash == std::string::npos) return Fail("plan '" + item + "' is not DEVICES/SPLIT");
    const std::string devices = item.substr(0, slash), split = item.substr(slash + 1);
    auto got = AllLogits(**model, devices, split, tokens, chunk);
    if (!got.ok()) return Fail(item + ": " + got.status().ToString());
    int agree = 0;
    double max_diff = 0, max_flip_margin = 0;
    for (int p = 0; p < n; ++p) {
      const float* x = base->data() + static_cast<size_t>(p) * c.n_vocab;
      const float* y = got->data() + static_cast<size_t>(p) * c.n_vocab;
      const int64_t top_x = std::max_element(x, x + c.n_vocab) - x;
      const int64_t top_y = std::max_element(y, y + c.n_vocab) - y;
      if (top_x == top_y) {
        ++agree;
      } else {
        max_flip_margin = std::max(max_flip_margin, static_cast<double>(x[top_x] - x[top_y]));
      }
      for (int v = 0; v < c.n_vocab; ++v) {
        max_diff = std::max(max_diff, std::fabs(static_cast<double>(x[v]) - y[v]));
      }
    }
    nlohmann::json j;
    j["model"] = model_path;
    j["devices"] = devices;
    j["split"] = split;
    j["positions"] = n;
    j["top1_agree"] = agree;
    j["top1_rate"] = static_cast<double>(agree) / n;
    j["bit_identical"] = std::memcmp(base->data(), got->data(), base->size() * sizeof(float)) == 0;
    j["max_abs_dlogit"] = max_diff;
    j["max_margin_at_disagreement"] = max_flip_margin;
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}
