// kvmesh_kernel_bench: throughput of the panel GEMM kernels.
//
// Per weight type, one thread, on a rows x cols matrix; reported per
// CPU-second of the measuring thread (so other load on the machine barely
// skews it):
//   gemv  one token:   weight GB/s streamed
//   gemm  many tokens: GMAC/s (multiply-adds of weight x activation)
//
//   kvmesh_kernel_bench [--tokens 128] [--rows 2048] [--cols 2048] [--isa avx512]
//                       [--types q4_0,q8_0,...] [--seconds 1]
//
// With --model FILE: the decode weight stream alone - every matrix of the
// model once per "token" (of a mixture of experts: the router and as many
// experts per layer as a token uses, drawn afresh per token), one token at a
// time, on --threads threads - in
// wall-clock GB/s, to compare with kvmesh_bandwidth_probe and with the
// tokens/s of `kvmesh bench` (what the rest of a decode step costs).
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/thread_pool.h"
#include "worker/kernels/cpu/cpu_features.h"
#include "worker/kernels/cpu/kernel_parity.h"
#include "worker/kernels/cpu/type_traits.h"
#include "worker/model/model.h"
#include "worker/runtime/cpu/cpu_matmul.h"
#include "worker/runtime/cpu/packed_weights.h"

namespace kvmesh {
namespace {

double ThreadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct Args {
  int64_t tokens = 128;
  int64_t rows = 2048;
  int64_t cols = 2048;
  double seconds = 1.0;
  kernels::Isa isa = kernels::ActiveIsa();
  std::string model;
  int threads = 2;
  std::vector<std::string> types = {"f32",  "f16",  "bf16", "q8_0", "q4_0", "q4_1",
                                    "q5_0", "q5_1", "q4_k", "q5_k", "q6_k"};
};

std::optional<TensorType> ParseType(const std::string& name) {
  for (TensorType t : {TensorType::kF32, TensorType::kF16, TensorType::kBF16, TensorType::kQ8_0,
                       TensorType::kQ4_0, TensorType::kQ4_1, TensorType::kQ5_0, TensorType::kQ5_1,
                       TensorType::kQ4_K, TensorType::kQ5_K, TensorType::kQ6_K}) {
    std::string lower = TensorTypeName(t);
    for (char& c : lower) c = static_cast<char>(std::tolower(c));
    if (lower == name) return t;
  }
  return std::nullopt;
}

// Seconds of thread CPU time per call of fn, repeated for about `budget`.
template <typename Fn>
double TimePerCall(double budget, const Fn& fn) {
  fn();  // warm-up
  int calls = 0;
  const double start = ThreadSeconds();
  double now = start;
  do {
    fn();
    ++calls;
    now = ThreadSeconds();
  } while (now - start < budget);
  return (now - start) / calls;
}

void Run(const Args& args, TensorType type) {
  const kernels::TypeTraits& traits = *kernels::GetReferenceTypeTraits(type);
  const size_t row_bytes = kernels::RowSizeBytes(traits, args.cols);
  std::vector<uint8_t> rows(row_bytes * args.rows);
  kernels::TestRandom rng(1);
  for (int64_t r = 0; r < args.rows; ++r) {
    const std::vector<float> v = kernels::MakeTestRow(rng, args.cols);
    traits.from_float(v.data(), rows.data() + r * row_bytes, args.cols);
  }
  WeightMatrix w;
  w.type = type;
  w.rows = args.rows;
  w.cols = args.cols;
  w.row_bytes = row_bytes;
  w.data = rows.data();
  w.traits = &traits;
  ThreadPool pool(1);
  const PackedMatrix packed = PackedMatrix::Pack(w, args.isa, pool);
  std::vector<float> x(args.tokens * args.cols);
  for (int64_t t = 0; t < args.tokens; ++t) {
    const std::vector<float> v = kernels::MakeTestRow(rng, args.cols);
    std::copy(v.begin(), v.end(), x.begin() + t * args.cols);
  }
  QuantizedRows xq_one, xq_many;
  QuantizeRows(x.data(), 1, args.cols, packed.vec_dot_type(), pool, &xq_one);
  QuantizeRows(x.data(), args.tokens, args.cols, packed.vec_dot_type(), pool, &xq_many);
  std::vector<float> y(args.tokens * args.rows);
  const double gemv =
      TimePerCall(args.seconds, [&] { MatMulQuantized(packed, xq_one, y.data(), pool); });
  const double gemm =
      TimePerCall(args.seconds, [&] { MatMulQuantized(packed, xq_many, y.data(), pool); });
  const double quantize = TimePerCall(args.seconds / 4, [&] {
    QuantizeRows(x.data(), args.tokens, args.cols, packed.vec_dot_type(), pool, &xq_many);
  });
  const double bytes = static_cast<double>(row_bytes) * args.rows;
  const double macs = static_cast<double>(args.rows) * args.cols;
  std::printf(
      "%-5s %-6s gemv %7.2f GB/s %6.1f us | gemm(%lld) %7.2f GMAC/s %8.1f us | "
      "quantize %6.1f us\n",
      TensorTypeName(type).c_str(), std::string(kernels::IsaName(args.isa)).c_str(),
      bytes / gemv / 1e9, gemv * 1e6, static_cast<long long>(args.tokens),
      macs * args.tokens / gemm / 1e9, gemm * 1e6, quantize * 1e6);
}

// The decode weight stream of a whole model: every matrix once per token.
int RunModel(const Args& args) {
  auto model = Model::Load(args.model);
  if (!model.ok()) {
    std::fprintf(stderr, "%s\n", model.status().ToString().c_str());
    return 1;
  }
  ThreadPool pool(args.threads);
  const PackedWeights packed = PackedWeights::Pack((*model)->weights(), args.isa, pool);
  // The matrices one token reads, in the order a forward pass reads them. A
  // mixture of experts reads its router and the experts the token picks:
  // n_expert_used of them per layer, drawn afresh for every token as routing
  // would scatter them (a fixed pseudo-random sequence).
  const ModelConfig& config = (*model)->config();
  uint64_t draw = 0x9e3779b97f4a7c15ull;
  auto token_matrices = [&] {
    std::vector<const PackedMatrix*> out;
    for (const PackedLayer& l : packed.layers) {
      for (const PackedMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo}) out.push_back(m);
      if (l.gate_exps.empty()) {
        for (const PackedMatrix* m : {&l.w_gate, &l.w_up, &l.w_down}) out.push_back(m);
        continue;
      }
      out.push_back(&l.w_gate_inp);
      std::vector<int> chosen;
      while (static_cast<int>(chosen.size()) < config.n_expert_used) {
        draw = draw * 6364136223846793005ull + 1442695040888963407ull;
        const int e = static_cast<int>((draw >> 33) % l.gate_exps.size());
        if (std::find(chosen.begin(), chosen.end(), e) == chosen.end()) chosen.push_back(e);
      }
      for (int e : chosen) {
        for (const PackedMatrix* m : {&l.gate_exps[e], &l.up_exps[e], &l.down_exps[e]}) {
          out.push_back(m);
        }
      }
      if (config.n_ff_shexp > 0) {
        for (const PackedMatrix* m : {&l.gate_shexp, &l.up_shexp, &l.down_shexp}) out.push_back(m);
      }
    }
    out.push_back(&packed.output);
    return out;
  };
  std::vector<const PackedMatrix*> matrices = token_matrices();
  uint64_t bytes = 0;
  int64_t widest = 0;
  for (const PackedMatrix* m : matrices) {
    bytes += m->panel_bytes() * m->num_panels();
    widest = std::max({widest, m->rows(), m->cols()});
  }
  std::vector<float> x(widest, 0.5f), y(widest);
  QuantizedRows xq;
  auto token = [&] {
    matrices = token_matrices();
    for (const PackedMatrix* m : matrices) {
      QuantizeRows(x.data(), 1, m->cols(), m->vec_dot_type(), pool, &xq);
      MatMulQuantized(*m, xq, y.data(), pool);
    }
  };
  token();
  std::vector<double> rates;
  for (int r = 0; r < 7; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 4; ++i) token();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    rates.push_back(4.0 * bytes / s / 1e9);
  }
  std::sort(rates.begin(), rates.end());
  std::printf(
      "decode weight stream of %s: %.1f MiB per token, %d threads: %.2f GB/s "
      "(median of 7; %.1f tokens/s if nothing else took time)\n",
      args.model.c_str(), bytes / 1048576.0, args.threads, rates[3], rates[3] * 1e9 / bytes);
  // The same per weight type, matrices of one type back to back.
  for (TensorType type :
       {TensorType::kF16, TensorType::kF32, TensorType::kBF16, TensorType::kQ8_0, TensorType::kQ4_0,
        TensorType::kIQ4_NL, TensorType::kQ2_K, TensorType::kQ3_K, TensorType::kQ4_K,
        TensorType::kQ5_K, TensorType::kQ6_K, TensorType::kIQ4_XS, TensorType::kIQ3_S,
        TensorType::kIQ3_XXS, TensorType::kIQ2_XS}) {
    uint64_t type_bytes = 0;
    for (const PackedMatrix* m : matrices) {
      if (m->type() == type) type_bytes += m->panel_bytes() * m->num_panels();
    }
    if (type_bytes == 0) continue;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 8; ++i) {
      for (const PackedMatrix* m : matrices) {
        if (m->type() != type) continue;
        QuantizeRows(x.data(), 1, m->cols(), m->vec_dot_type(), pool, &xq);
        MatMulQuantized(*m, xq, y.data(), pool);
      }
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("  %-5s %7.1f MiB per token: %.2f GB/s\n", TensorTypeName(type).c_str(),
                type_bytes / 1048576.0, 8.0 * type_bytes / s / 1e9);
  }
  return 0;
}

}  // namespace
}  // namespace kvmesh

int main(int argc, char** argv) {
  kvmesh::Args args;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value for %s\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--tokens") {
      args.tokens = std::stoll(next());
    } else if (a == "--rows") {
      args.rows = std::stoll(next());
    } else if (a == "--cols") {
      args.cols = std::stoll(next());
    } else if (a == "--seconds") {
      args.seconds = std::stod(next());
    } else if (a == "--isa") {
      const auto isa = kvmesh::kernels::ParseIsa(next());
      if (!isa || !kvmesh::kernels::IsaSupported(*isa)) {
        std::fprintf(stderr, "unknown or unsupported --isa\n");
        return 2;
      }
      args.isa = *isa;
    } else if (a == "--model") {
      args.model = next();
    } else if (a == "--threads") {
      args.threads = std::stoi(next());
    } else if (a == "--types") {
      args.types.clear();
      std::string list = next();
      size_t start = 0;
      while (start <= list.size()) {
        const size_t comma = list.find(',', start);
        args.types.push_back(list.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    } else {
      std::fprintf(stderr, "unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!args.model.empty()) return kvmesh::RunModel(args);
  for (const std::string& name : args.types) {
    const auto type = kvmesh::ParseType(name);
    if (!type) {
      std::fprintf(stderr, "unknown type %s\n", name.c_str());
      return 2;
    }
    kvmesh::Run(args, *type);
  }
  return 0;
}
