// kvmesh_gpu_bench: the GPU numbers of bench/gpu_check.sh.
//
//   kvmesh_gpu_bench probe
//       device-to-device copy bandwidth of GPU 0 (the roofline decode is
//       measured against), as one JSON line.
//   kvmesh_gpu_bench synth --shape S --type T --vocab V -o FILE
//       a synthetic model (worker/model/synthetic_model.h) written with every
//       core, so the check needs no kvmesh CLI build.
//   kvmesh_gpu_bench run -m MODEL [--devices cuda:0] [--split S] [--pp 512]
//                        [--tg 32] [--streams 16] [--ctx 16] [--bandwidth GBPS]
//       prefill of --pp tokens, batch-1 decode and --streams-stream decode
//       (each stream after a prompt of --ctx tokens),
//       medians of 3, one JSON line: tokens/s of each, the weight bytes a
//       decode step reads, and the share of --bandwidth that batch-1 decode
//       reaches.
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numeric>
#include <string>
#include <thread>
#include <vector>

#include "common/thread_pool.h"
#include "worker/model/model.h"
#include "worker/model/synthetic_model.h"
#include "worker/runtime/cuda/cuda_executor.h"
#include "worker/runtime/model_executor.h"

namespace {

using namespace kvmesh;
using Clock = std::chrono::steady_clock;

int Fail(const std::string& message) {
  std::fprintf(stderr, "error: %s\n", message.c_str());
  return 1;
}

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

std::string Arg(int argc, char** argv, const std::string& name, const std::string& fallback) {
  for (int i = 2; i + 1 < argc; ++i) {
    if (name == argv[i]) return argv[i + 1];
  }
  return fallback;
}

int Probe() {
  const size_t bytes = size_t{2} << 30;
  void* a = nullptr;
  void* b = nullptr;
  if (cudaMalloc(&a, bytes) != cudaSuccess || cudaMalloc(&b, bytes) != cudaSuccess) {
    return Fail(std::string("cudaMalloc: ") + cudaGetErrorString(cudaGetLastError()));
  }
  cudaMemset(a, 1, bytes);
  std::vector<double> times;
  for (int i = 0; i < 6; ++i) {
    const auto t0 = Clock::now();
    cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice);
    cudaDeviceSynchronize();
    if (i > 0) times.push_back(Seconds(t0, Clock::now()));
  }
  cudaFree(a);
  cudaFree(b);
  // A copy reads and writes every byte.
  const double gbps = 2.0 * static_cast<double>(bytes) / Median(times) / 1e9;
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf(
      "%s\n",
      nlohmann::json{
          {"probe", "d2d_copy"}, {"device", prop.name}, {"bytes", bytes}, {"gb_per_s", gbps}}
          .dump()
          .c_str());
  return 0;
}

int Synth(int argc, char** argv) {
  SynthesizeOptions o;
  const auto shape = FindSyntheticShape(Arg(argc, argv, "--shape", "llama-1b"));
  const auto mix = ParseSyntheticMix(Arg(argc, argv, "--type", "q4_0"));
  if (!shape || !mix) return Fail("unknown --shape or --type");
  o.shape = *shape;
  o.mix = *mix;
  o.vocab_path = Arg(argc, argv, "--vocab", "");
  o.output_path = Arg(argc, argv, "-o", "");
  if (o.vocab_path.empty() || o.output_path.empty()) return Fail("synth needs --vocab and -o");
  ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  const auto t0 = Clock::now();
  auto report = SynthesizeModel(o, pool);
  if (!report.ok()) return Fail(report.status().ToString());
  std::printf("%s\n", nlohmann::json{{"synth", o.output_path},
                                     {"bytes", report->file_bytes},
                                     {"seconds", Seconds(t0, Clock::now())}}
                          .dump()
                          .c_str());
  return 0;
}

// One step of `streams` sequences, each decoding one token at `pos`.
ForwardBatch DecodeBatch(int streams, int32_t pos, const std::vector<std::vector<int32_t>>& tables,
                         int n_vocab) {
  ForwardBatch batch;
  for (int s = 0; s < streams; ++s) {
    batch.tokens.push_back(2 + (pos * 31 + s * 7) % (n_vocab - 2));
    batch.sequences.push_back({s, 1, pos, tables[s], LogitsMode::kLast});
  }
  return batch;
}

int Run(int argc, char** argv) {
  const std::string path = Arg(argc, argv, "-m", "");
  const std::string devices = Arg(argc, argv, "--devices", "cuda:0");
  const std::string split = Arg(argc, argv, "--split", "");
  const int pp = std::stoi(Arg(argc, argv, "--pp", "512"));
  const int tg = std::stoi(Arg(argc, argv, "--tg", "32"));
  const int streams = std::stoi(Arg(argc, argv, "--streams", "16"));
  const int ctx = std::max(1, std::stoi(Arg(argc, argv, "--ctx", "16")));
  const double bandwidth = std::stod(Arg(argc, argv, "--bandwidth", "0"));
  auto model = Model::Load(path);
  if (!model.ok()) return Fail(model.status().ToString());
  const ModelConfig& c = (*model)->config();
  const KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, TensorType::kF16, TensorType::kF16};
  auto options = PlanOptions::Parse(devices, split, "", 1);
  if (!options.ok()) return Fail(options.status().ToString());
  // Blocks: the prefill's, plus each stream's prompt and decode.
  const int per_stream = (ctx + tg + 15) / 16 + 1;
  const int pp_blocks = (pp + 15) / 16;
  const int64_t blocks = pp_blocks + static_cast<int64_t>(streams) * per_stream;
  auto exec = ModelExecutor::Create(**model, layout, *options, blocks);
  if (!exec.ok()) return Fail(exec.status().ToString());
  ForwardOutput out;

  // Prefill: pp tokens in one step, logits of the last.
  std::vector<int32_t> pp_table(pp_blocks);
  std::iota(pp_table.begin(), pp_table.end(), 0);
  ForwardBatch prefill;
  for (int i = 0; i < pp; ++i) prefill.tokens.push_back(2 + (i * 131) % (c.n_vocab - 2));
  prefill.sequences.push_back({0, pp, 0, pp_table, LogitsMode::kLast});
  std::vector<double> pp_times;
  for (int r = 0; r < 4; ++r) {
    const auto t0 = Clock::now();
    Status s = (*exec)->Forward(prefill, &out);
    if (!s.ok()) return Fail(s.ToString());
    if (r > 0) pp_times.push_back(Seconds(t0, Clock::now()));
  }

  // Decode: each stream prefills --ctx tokens (in chunks of up to 2048),
  // then decodes tg steps; batch-1 uses stream 0 alone.
  std::vector<std::vector<int32_t>> tables(streams);
  for (int s = 0; s < streams; ++s) {
    for (int b = 0; b < per_stream; ++b) tables[s].push_back(pp_blocks + s * per_stream + b);
    for (int start = 0; start < ctx; start += 2048) {
      const int n = std::min(2048, ctx - start);
      ForwardBatch p;
      for (int i = start; i < start + n; ++i)
        p.tokens.push_back(2 + (i * 17 + s) % (c.n_vocab - 2));
      p.sequences.push_back({0, n, start, tables[s], LogitsMode::kLast});
      Status st = (*exec)->Forward(p, &out);
      if (!st.ok()) return Fail(st.ToString());
    }
  }
  auto decode_rate = [&](int n) -> StatusOr<double> {
    std::vector<double> rates;
    for (int r = 0; r < 3; ++r) {
      const auto t0 = Clock::now();
      for (int step = 0; step < tg; ++step) {
        RETURN_IF_ERROR((*exec)->Forward(DecodeBatch(n, ctx + step, tables, c.n_vocab), &out));
      }
      rates.push_back(static_cast<double>(n) * tg / Seconds(t0, Clock::now()));
    }
    return Median(rates);
  };
  auto tg1 = decode_rate(1);
  if (!tg1.ok()) return Fail(tg1.status().ToString());
  auto tgn = decode_rate(streams);
  if (!tgn.ok()) return Fail(tgn.status().ToString());

  // What one decode step reads: every matrix but the embedding (a lookup),
  // unless the output head is the embedding itself.
  const ModelWeights& w = (*model)->weights();
  uint64_t read = 0;
  for (const DeviceCounters& d : (*exec)->Counters()) read += d.weight_bytes;
  if (!w.tied_output) read -= std::min(read, w.token_embd.num_bytes());
  const double tg1_gbps = *tg1 * static_cast<double>(read) / 1e9;
  nlohmann::json row = {{"model", path},
                        {"devices", devices},
                        {"split", split.empty() ? "none" : split},
                        {"weights_read_per_token", read},
                        {"pp", pp},
                        {"pp_tokens_per_s", pp / Median(pp_times)},
                        {"tg1_tokens_per_s", *tg1},
                        {"tg1_gb_per_s", tg1_gbps},
                        {"streams", streams},
                        {"ctx", ctx},
                        {"tgN_tokens_per_s", *tgn},
                        {"tgN_over_tg1", *tgn / *tg1}};
  if (bandwidth > 0) row["tg1_share_of_copy_bandwidth"] = tg1_gbps / bandwidth;
  // As the executor reads them.
  const CudaExecutorOptions cuda = CudaExecutorOptions::FromEnv();
  row["cuda_graphs"] = cuda.graphs;
  row["matvec_rows"] = cuda.matvec_rows;
  std::printf("%s\n", row.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string command = argc > 1 ? argv[1] : "";
  if (command == "probe") return Probe();
  if (command == "synth") return Synth(argc, argv);
  if (command == "run") return Run(argc, argv);
  return Fail("usage: kvmesh_gpu_bench probe | synth ... | run -m MODEL ...");
}
