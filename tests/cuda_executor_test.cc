// The CUDA executor end to end, against the CPU executor on the same model:
//  - one GPU (the fast kernels and the plain reference kernels), on F32,
//    F16 and quantized models and f16 / q8_0 / q4_0+rotate KV pages, through
//    chunked prefill (the tensor-core GEMM path), decode (the mat-vecs), a
//    batch mixing a prefix hit with a decode, and a recompute;
//  - both splits over two virtual devices on one GPU (cuda:0.0,cuda:0.1);
//  - pages written by the CPU read by the GPU, and back;
//  - greedy decode against the CPU's.
// Without a GPU those tests print that they skip. What needs no GPU runs
// everywhere: a CUDA device asked for on a machine without one fails with a
// message naming it, and the memory fit of CUDA devices, with a fake probe.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "common/tensor_type.h"
#include "tests/support/forward_scenario.h"
#include "worker/model/model.h"
#include "worker/runtime/model_executor.h"

namespace kvmesh {
namespace {

using ::testing::HasSubstr;

const std::string kShared = KVMESH_SHARED_DIR;

std::unique_ptr<Model> LoadShared(const std::string& file) {
  auto model = Model::Load(kShared + "/models/" + file);
  EXPECT_TRUE(model.ok()) << model.status().ToString() << " (needs ../shared/models)";
  return model.ok() ? std::move(model).value() : nullptr;
}

bool HaveGpu() { return ProbeGpuMemory(0).ok(); }

#define SKIP_WITHOUT_GPU()                                                                     \
  if (!HaveGpu()) {                                                                            \
    GTEST_SKIP() << "no GPU on this machine (" << ProbeGpuMemory(0).status().message() << ")"; \
  }

KvLayout LayoutFor(const Model& model, TensorType kv, bool rotate) {
  const ModelConfig& c = model.config();
  KvLayout layout{c.n_layer, c.n_head_kv, c.head_dim, 16, kv, kv};
  layout.k_rotated = rotate;
  layout.v_rotated = rotate;
  return layout;
}

StatusOr<std::unique_ptr<ModelExecutor>> Make(const Model& model, const KvLayout& layout,
                                              const std::string& devices,
                                              const std::string& split) {
  ASSIGN_OR_RETURN(PlanOptions options, PlanOptions::Parse(devices, split, "", 2));
  return ModelExecutor::Create(model, layout, options, 12);
}

using testing::RunForwardScenario;
using testing::ScenarioTokens;

// How one run's logits compare with a reference run's, row by row.
struct Agreement {
  int rows = 0, same_top1 = 0;
  double max_abs = 0.0, max_logit = 0.0;
  // Where the top-1 differs: the row and how far the reference ranks the
  // chosen token below its own best (0: a tie).
  std::vector<std::pair<int, double>> flips;
  double WidestFlip() const {
    double m = 0.0;
    for (const auto& f : flips) m = std::max(m, f.second);
    return m;
  }
};

Agreement Compare(const std::vector<std::vector<float>>& got,
                  const std::vector<std::vector<float>>& want, int n_vocab) {
  Agreement a;
  EXPECT_EQ(got.size(), want.size());
  for (size_t s = 0; s < std::min(got.size(), want.size()); ++s) {
    EXPECT_EQ(got[s].size(), want[s].size()) << "step " << s;
    if (got[s].size() != want[s].size()) continue;
    for (size_t r = 0; r < want[s].size() / n_vocab; ++r) {
      const float* g = got[s].data() + r * n_vocab;
      const float* w = want[s].data() + r * n_vocab;
      const int64_t g_top = std::max_element(g, g + n_vocab) - g;
      const int64_t w_top = std::max_element(w, w + n_vocab) - w;
      if (g_top == w_top) {
        ++a.same_top1;
      } else {
        a.flips.push_back({a.rows, static_cast<double>(w[w_top]) - w[g_top]});
      }
      ++a.rows;
      for (int i = 0; i < n_vocab; ++i) {
        a.max_abs = std::max(a.max_abs, static_cast<double>(std::fabs(g[i] - w[i])));
        a.max_logit = std::max(a.max_logit, static_cast<double>(std::fabs(w[i])));
      }
    }
  }
  return a;
}

// What a device's logits may differ from the CPU's by.
//  - Every logit within 5% of the largest.
//  - The top-1 token the same, except on near ties: where the CPU ranks the
//    device's choice within 1% of the largest logit below its own. The CPU's
//    own kernels differ that way among themselves: on these steps of random
//    tokens, its scalar and AVX-512 kernels pick different tokens on rows
//    whose two best logits are 0.001-0.04 apart (tinystories-d64 Q6_K and
//    Q4_K_M), and a bar of 99% identical top-1 fails them as it failed the
//    first GPU run.
//  - Through a 4-bit cache (`cache_error` > 0) both bars widen to the
//    largest change the cache itself makes to these logits on the CPU,
//    against an f32 cache. A rounding difference in a key before it is
//    encoded moves it a whole 4-bit step, or changes its block's scale, so
//    two correct executors differ there by up to what the quantization does.
struct Bar {
  double max_abs = 0.0, near_tie = 0.0;
};

Bar BarFor(const Agreement& a, double cache_error) {
  return {std::max(0.05 * a.max_logit + 1e-3, cache_error),
          std::max(0.01 * a.max_logit, cache_error)};
}

void ExpectClose(const Agreement& a, const std::string& what, double cache_error = 0.0) {
  const Bar bar = BarFor(a, cache_error);
  std::printf("%s: top-1 %d/%d, max |d logit| %.4g (logits up to %.3g; bar %.3g)", what.c_str(),
              a.same_top1, a.rows, a.max_abs, a.max_logit, bar.max_abs);
  for (const auto& [row, margin] : a.flips) std::printf(" [row %d: %.3g]", row, margin);
  std::printf("\n");
  EXPECT_LT(a.max_abs, bar.max_abs) << what;
  EXPECT_LE(a.WidestFlip(), bar.near_tie)
      << what << ": the top-1 token differs where the reference's choice is clear";
}

struct Case {
  std::string model;
  TensorType kv;
  bool rotate;
};

void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " kv " << TensorTypeName(c.kv) << (c.rotate ? "+rotate" : "");
}

// Whether every attention output matrix of `model` can be cut between two
// devices at whole blocks (its half width a multiple of its block size).
bool HalvesAtWholeBlocks(const Model& model) {
  const int half = model.config().n_embd_q() / 2;
  for (const LayerWeights& l : model.weights().layers) {
    const auto info = LookupTensorType(static_cast<uint32_t>(l.wo.type));
    if (info && half % static_cast<int>(info->block_size) != 0) return false;
  }
  return true;
}

class CudaExecutorTest : public ::testing::TestWithParam<Case> {};

TEST_P(CudaExecutorTest, OneGpuAgreesWithTheCpu) {
  SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model);
  ASSERT_NE(model, nullptr);
  const int n_vocab = model->config().n_vocab;
  const KvLayout layout = LayoutFor(*model, c.kv, c.rotate);
  auto cpu = Make(*model, layout, "", "");
  ASSERT_TRUE(cpu.ok()) << cpu.status().ToString();
  const auto want = RunForwardScenario(**cpu, n_vocab);
  // The same steps through an f32 cache, on both: the executors' arithmetic
  // without the cache's rounding.
  const KvLayout exact = LayoutFor(*model, TensorType::kF32, false);
  auto cpu_exact = Make(*model, exact, "", "");
  ASSERT_TRUE(cpu_exact.ok()) << cpu_exact.status().ToString();
  const auto want_exact = RunForwardScenario(**cpu_exact, n_vocab);
  const Agreement cache = Compare(want, want_exact, n_vocab);
  std::printf("%s: the CPU's %s cache against its f32 cache: top-1 %d/%d, max |d logit| %.4g\n",
              c.model.c_str(), layout.TypeName().c_str(), cache.same_top1, cache.rows,
              cache.max_abs);
  const double cache_error = c.kv == TensorType::kQ4_0 ? cache.max_abs : 0.0;
  // "matvec32": the fast kernels with the mat-vecs taking steps of up to 32
  // rows (KVMESH_CUDA_MATVEC_ROWS), which the scenario's 16- to 24-token
  // prefills then go through.
  for (const char* kernels : {"fast", "plain", "matvec32"}) {
    const bool matvec32 = std::string(kernels) == "matvec32";
    setenv("KVMESH_CUDA_KERNELS", matvec32 ? "fast" : kernels, 1);
    if (matvec32) setenv("KVMESH_CUDA_MATVEC_ROWS", "32", 1);
    auto gpu = Make(*model, layout, "cuda:0", "");
    auto gpu_exact = Make(*model, exact, "cuda:0", "");
    unsetenv("KVMESH_CUDA_KERNELS");
    unsetenv("KVMESH_CUDA_MATVEC_ROWS");
    ASSERT_TRUE(gpu.ok()) << gpu.status().ToString();
    ASSERT_TRUE(gpu_exact.ok()) << gpu_exact.status().ToString();
    const auto got = RunForwardScenario(**gpu, n_vocab);
    ExpectClose(Compare(got, want, n_vocab),
                c.model + " kv " + layout.TypeName() + " " + kernels + " kernels", cache_error);
    ExpectClose(Compare(RunForwardScenario(**gpu_exact, n_vocab), want_exact, n_vocab),
                c.model + " kv f32 " + kernels + " kernels");
    // As an approximation of the f32 cache, the device's cache is as good
    // as the CPU's (printed: the bars above decide).
    const Agreement gpu_cache = Compare(got, want_exact, n_vocab);
    std::printf(
        "%s: the GPU's %s cache (%s) against the CPU's f32 cache: top-1 %d/%d, "
        "max |d logit| %.4g\n",
        c.model.c_str(), layout.TypeName().c_str(), kernels, gpu_cache.same_top1, gpu_cache.rows,
        gpu_cache.max_abs);
  }
}

TEST_P(CudaExecutorTest, SplitsOverTwoVirtualDevicesAgreeWithOneGpu) {
  SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model);
  ASSERT_NE(model, nullptr);
  const int n_vocab = model->config().n_vocab;
  const KvLayout layout = LayoutFor(*model, c.kv, c.rotate);
  auto one = Make(*model, layout, "cuda:0", "");
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  const auto want = RunForwardScenario(**one, n_vocab);
  for (const char* split : {"layer", "tensor"}) {
    if (std::string(split) == "tensor" && model->config().n_head_kv % 2 != 0) continue;
    auto two = Make(*model, layout, "cuda:0.0,cuda:0.1", split);
    if (std::string(split) == "tensor" && !HalvesAtWholeBlocks(*model)) {
      // A K-quant file's 256-wide blocks cannot be cut at its half width:
      // the plan refuses, naming the matrix (parallel_plan_test checks this
      // on the CPU).
      ASSERT_FALSE(two.ok()) << c.model << " should not split by tensor";
      EXPECT_THAT(two.status().message(), HasSubstr("cannot be cut at column"));
      continue;
    }
    ASSERT_TRUE(two.ok()) << two.status().ToString();
    ExpectClose(Compare(RunForwardScenario(**two, n_vocab), want, n_vocab),
                c.model + " " + split + " split on cuda:0.0,cuda:0.1");
  }
}

TEST_P(CudaExecutorTest, PagesMoveBetweenTheCpuAndTheGpu) {
  SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  std::unique_ptr<Model> model = LoadShared(c.model);
  ASSERT_NE(model, nullptr);
  const int n_vocab = model->config().n_vocab;
  const KvLayout layout = LayoutFor(*model, c.kv, c.rotate);
  auto cpu = Make(*model, layout, "", "");
  auto gpu = Make(*model, layout, "cuda:0", "");
  ASSERT_TRUE(cpu.ok() && gpu.ok());
  RunForwardScenario(**cpu, n_vocab);
  // A's pages, computed on the CPU, into the GPU, unchanged.
  for (int32_t block : {0, 1, 2, 9}) {
    std::vector<uint8_t> bytes, back;
    ASSERT_TRUE((*cpu)->ReadBlock(block, &bytes).ok());
    ASSERT_TRUE((*gpu)->WriteBlock(block, bytes).ok());
    ASSERT_TRUE((*gpu)->ReadBlock(block, &back).ok());
    EXPECT_EQ(back, bytes) << "block " << block;
  }
  // The next decode of A reads them on both.
  ForwardBatch batch;
  batch.tokens = {ScenarioTokens(45, n_vocab, 1)[44]};
  const std::vector<int32_t> a_blocks = {0, 1, 2, 9};
  batch.sequences = {{0, 1, 44, a_blocks, LogitsMode::kLast}};
  ForwardOutput on_cpu, on_gpu;
  ASSERT_TRUE((*cpu)->Forward(batch, &on_cpu).ok());
  ASSERT_TRUE((*gpu)->Forward(batch, &on_gpu).ok());
  ExpectClose(Compare({on_gpu.logits}, {on_cpu.logits}, n_vocab),
              c.model + ": decode over pages the CPU wrote");
}

INSTANTIATE_TEST_SUITE_P(
    Models, CudaExecutorTest,
    ::testing::Values(Case{"stories260K.gguf", TensorType::kF16, false},
                      Case{"stories260K-Q8_0.gguf", TensorType::kF16, false},
                      Case{"stories260K-Q4_0.gguf", TensorType::kF32, false},
                      Case{"stories260K-F16.gguf", TensorType::kBF16, false},
                      Case{"tinystories-d64.gguf", TensorType::kQ8_0, false},
                      Case{"tinystories-d64-Q4_K_M.gguf", TensorType::kQ4_0, true},
                      Case{"tinystories-d64-Q6_K.gguf", TensorType::kF16, false},
                      Case{"tinystories-d64-F16.gguf", TensorType::kQ4_0, false}),
    [](const ::testing::TestParamInfo<Case>& info) {
      std::string name = info.param.model.substr(0, info.param.model.find(".gguf")) + "_kv_" +
                         TensorTypeName(info.param.kv) + (info.param.rotate ? "_rotated" : "");
      std::replace(name.begin(), name.end(), '-', '_');
      return name;
    });

TEST(CudaGreedyTest, GreedyDecodeMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Model> model = LoadShared("tinystories-d64.gguf");
  ASSERT_NE(model, nullptr);
  const KvLayout layout = LayoutFor(*model, TensorType::kF16, false);
  std::vector<std::vector<int32_t>> runs;
  for (const char* devices : {"", "cuda:0"}) {
    auto exec = Make(*model, layout, devices, "");
    ASSERT_TRUE(exec.ok()) << exec.status().ToString();
    std::vector<int32_t> tokens = ScenarioTokens(4, model->config().n_vocab, 7);
    const std::vector<int32_t> blocks = {0, 1, 2, 3, 4};
    ForwardBatch batch;
    batch.tokens = tokens;
    batch.sequences = {{0, 4, 0, blocks, LogitsMode::kLast}};
    for (int step = 0; step < 48; ++step) {
      ForwardOutput out;
      ASSERT_TRUE((*exec)->Forward(batch, &out).ok());
      const auto best = std::max_element(out.logits.begin(), out.logits.end());
      const int32_t next = static_cast<int32_t>(best - out.logits.begin());
      batch.sequences = {{0, 1, static_cast<int32_t>(tokens.size()), blocks, LogitsMode::kLast}};
      tokens.push_back(next);
      batch.tokens = {next};
    }
    runs.push_back(tokens);
  }
  EXPECT_EQ(runs[1], runs[0]);
}

// --- what runs without a GPU ------------------------------------------------

// Decode steps replayed from CUDA graphs (KVMESH_CUDA_GRAPHS=on) give the
// logits of the same steps launched kernel by kernel, to the bit: three
// sequences decoding together (a graph per shape: run, captured, replayed),
// then two of them (a new shape), across block boundaries, with a prefill
// between that takes the ordinary path.
TEST(CudaGraphTest, ReplayedDecodeStepsMatchLaunchedOnes) {
  SKIP_WITHOUT_GPU();
  std::unique_ptr<Model> model = LoadShared("tinystories-d64.gguf");
  ASSERT_NE(model, nullptr);
  const int n_vocab = model->config().n_vocab;
  const KvLayout layout = LayoutFor(*model, TensorType::kQ8_0, false);
  std::vector<std::vector<float>> runs[2];
  uint64_t launches[2] = {0, 0};
  for (int graphs = 0; graphs < 2; ++graphs) {
    if (graphs) setenv("KVMESH_CUDA_GRAPHS", "on", 1);
    auto exec = Make(*model, layout, "cuda:0", "");
    unsetenv("KVMESH_CUDA_GRAPHS");
    ASSERT_TRUE(exec.ok()) << exec.status().ToString();
    const std::vector<std::vector<int32_t>> tables = {
        {0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9, 10, 11}};  // 12 blocks: Make()'s
    std::vector<int32_t> length(3, 0);
    auto step = [&](const std::vector<int>& seqs, int tokens_each) {
      ForwardBatch batch;
      for (int s : seqs) {
        const std::vector<int32_t> t =
            ScenarioTokens(length[s] + tokens_each, n_vocab, 11 + static_cast<uint32_t>(s));
        batch.sequences.push_back({static_cast<int64_t>(batch.tokens.size()), tokens_each,
                                   length[s], tables[s], LogitsMode::kLast});
        batch.tokens.insert(batch.tokens.end(), t.end() - tokens_each, t.end());
        length[s] += tokens_each;
      }
      ForwardOutput out;
      Status st = (*exec)->Forward(batch, &out);
      EXPECT_TRUE(st.ok()) << st.ToString();
      runs[graphs].push_back(out.logits);
    };
    step({0, 1, 2}, 5);
    for (int i = 0; i < 30; ++i) step({0, 1, 2}, 1);
    step({2}, 12);  // a prefill chunk between
    for (int i = 0; i < 20; ++i) step({0, 1}, 1);
    for (const DeviceCounters& c : (*exec)->Counters()) launches[graphs] += c.graph_launches;
  }
  EXPECT_EQ(launches[0], 0u);
  // 3 sequences: 29 of 30 steps from a graph (the first runs to size the
  // buffers); then 2 sequences: 19 of 20.
  EXPECT_EQ(launches[1], 29u + 19u);
  ASSERT_EQ(runs[0].size(), runs[1].size());
  for (size_t i = 0; i < runs[0].size(); ++i) {
    EXPECT_EQ(runs[1][i], runs[0][i]) << "step " << i;
  }
}

TEST(CudaWithoutGpuTest, AskingForAGpuThatIsNotThereNamesIt) {
  if (HaveGpu()) GTEST_SKIP() << "this machine has a GPU; the no-GPU path is not reachable";
  std::unique_ptr<Model> model = LoadShared("stories260K.gguf");
  ASSERT_NE(model, nullptr);
  auto exec = Make(*model, LayoutFor(*model, TensorType::kF16, false), "cuda:0", "");
  ASSERT_FALSE(exec.ok());
  EXPECT_THAT(exec.status().message(), HasSubstr("cuda:0"));
  const std::string m = exec.status().message();
  EXPECT_TRUE(m.find("no usable CUDA device") != std::string::npos ||
              m.find("built without nvcc") != std::string::npos)
      << m;
  auto mixed = Make(*model, LayoutFor(*model, TensorType::kF16, false), "cpu:0,cuda:0", "layer");
  ASSERT_FALSE(mixed.ok());
  EXPECT_THAT(mixed.status().message(), HasSubstr("all CPU or all CUDA"));
}

TEST(CudaWithoutGpuTest, MemoryFitOfCudaDevicesUsesTheProbeAndNamesTheBytes) {
  std::unique_ptr<Model> model = LoadShared("tinystories-d64.gguf");
  ASSERT_NE(model, nullptr);
  const KvLayout layout = LayoutFor(*model, TensorType::kF16, false);
  auto plan_for = [&](const std::string& devices, const std::string& split) {
    auto o = PlanOptions::Parse(devices, split, "", 1);
    EXPECT_TRUE(o.ok()) << o.status().ToString();
    auto plan = ParallelPlan::Make(model->config(), model->weights(), *o);
    EXPECT_TRUE(plan.ok()) << plan.status().ToString();
    return *plan;
  };
  const uint64_t gib = uint64_t{1} << 30;
  int probes = 0;
  auto probe = [&](int gpu) -> StatusOr<GpuMemory> {
    ++probes;
    if (gpu > 1) return UnavailableError("device cuda:" + std::to_string(gpu) + ": not here");
    return GpuMemory{2 * gib, 4 * gib};
  };
  const ParallelPlan one = plan_for("cuda:0", "");
  ASSERT_GT(one.devices[0].workspace_bytes, 0u);
  const uint64_t block = layout.bytes_per_block();
  // Half of what is left after weights and workspace.
  auto half = FitKvBlocksOnDevices("0.5", layout, one, 256, probe);
  ASSERT_TRUE(half.ok()) << half.status().ToString();
  const uint64_t left = 2 * gib - one.devices[0].workspace_bytes - one.devices[0].weight_bytes;
  EXPECT_EQ(half->num_blocks, static_cast<int64_t>(left / 2 / block));
  // Two virtual devices on the GPU share its free memory: each holds half
  // the layers, in half the memory, so the count barely moves.
  auto shared =
      FitKvBlocksOnDevices("0.5", layout, plan_for("cuda:0.0,cuda:0.1", "layer"), 256, probe);
  ASSERT_TRUE(shared.ok()) << shared.status().ToString();
  EXPECT_LT(shared->num_blocks, half->num_blocks * 11 / 10);
  // An absolute budget larger than the GPU: refused, naming the device.
  auto big = FitKvBlocksOnDevices("3GiB", layout, one, 256, probe);
  ASSERT_FALSE(big.ok());
  EXPECT_THAT(big.status().message(), HasSubstr("device cuda:0"));
  EXPECT_THAT(big.status().message(), HasSubstr("GiB free"));
  auto fits = FitKvBlocksOnDevices("1GiB", layout, one, 256, probe);
  ASSERT_TRUE(fits.ok()) << fits.status().ToString();
  EXPECT_EQ(fits->num_blocks, static_cast<int64_t>(gib / block));
  // A GPU the probe cannot see.
  auto missing = FitKvBlocksOnDevices("0.5", layout, plan_for("cuda:2", ""), 256, probe);
  ASSERT_FALSE(missing.ok());
  EXPECT_THAT(missing.status().message(), HasSubstr("cuda:2"));
  EXPECT_GT(probes, 0);
}

}  // namespace
}  // namespace kvmesh
