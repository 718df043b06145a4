// Every CUDA kernel against its CPU reference (plain versions) and against
// the plain version (fast versions). Runs where a GPU is present; on a
// machine without one every test says so and is skipped.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "common/half.h"
#include "worker/kernels/cpu/ops.h"
#include "worker/kernels/cpu/type_traits.h"
#include "worker/kernels/cuda/cuda_device.h"
#include "worker/kernels/cuda/ops.h"
#include "worker/kv/kv_bias.h"
#include "worker/kv/kv_layout.h"
#include "worker/kv/kv_transform.h"
#include "worker/runtime/cpu/kv_quantizer.h"
#include "worker/runtime/cpu/rope.h"

namespace kvmesh::cuda {
namespace {

// A device copy of a host vector; Get() brings it back.
template <typename T>
class DeviceArray {
 public:
  explicit DeviceArray(size_t n) : n_(n) {
    EXPECT_EQ(cudaMalloc(&ptr_, std::max<size_t>(1, n) * sizeof(T)), cudaSuccess);
    cudaMemset(ptr_, 0, std::max<size_t>(1, n) * sizeof(T));
  }
  explicit DeviceArray(const std::vector<T>& host) : DeviceArray(host.size()) {
    cudaMemcpy(ptr_, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
  }
  ~DeviceArray() { cudaFree(ptr_); }
  DeviceArray(const DeviceArray&) = delete;
  T* get() const { return static_cast<T*>(ptr_); }
  std::vector<T> Get() const {
    std::vector<T> out(n_);
    EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(out.data(), ptr_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return out;
  }

 private:
  void* ptr_ = nullptr;
  size_t n_;
};

class CudaKernelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto count = DeviceCount();
    if (!count.ok()) {
      GTEST_SKIP() << "no GPU on this machine (" << count.status().message() << ")";
    }
    static bool printed = false;
    if (!printed) std::printf("running on %s\n", DeviceDescription(0)->c_str());
    printed = true;
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  }
  void TearDown() override {
    if (!IsSkipped()) {
      EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      EXPECT_EQ(cudaGetLastError(), cudaSuccess);
    }
  }
};

std::vector<float> Random(size_t n, uint32_t seed, float scale = 1.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

uint32_t Bits(float f) {
  uint32_t b;
  std::memcpy(&b, &f, 4);
  return b;
}

// max |a - b| / (max |b| + tiny)
double RelativeError(const std::vector<float>& a, const std::vector<float>& b) {
  double err = 0, mag = 1e-12;
  for (size_t i = 0; i < a.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(a[i]) - b[i]));
    mag = std::max(mag, std::fabs(static_cast<double>(b[i])));
  }
  return err / mag;
}

const TensorType kWeightTypes[] = {TensorType::kF32,  TensorType::kF16,  TensorType::kBF16,
                                   TensorType::kQ8_0, TensorType::kQ4_0, TensorType::kQ4_K,
                                   TensorType::kQ5_K, TensorType::kQ6_K};

struct HostMatrix {
  TensorType type;
  int64_t n_out, n_in;
  size_t row_bytes;
  std::vector<uint8_t> bytes;
  std::vector<float> dequantized;
};

HostMatrix MakeMatrix(TensorType type, int64_t n_out, int64_t n_in, uint32_t seed) {
  const kernels::TypeTraits* t = kernels::GetReferenceTypeTraits(type);
  HostMatrix m{type, n_out, n_in, kernels::RowSizeBytes(*t, n_in), {}, {}};
  const std::vector<float> x = Random(n_out * n_in, seed, 0.05f);
  m.bytes.resize(m.row_bytes * n_out);
  m.dequantized.resize(n_out * n_in);
  for (int64_t r = 0; r < n_out; ++r) {
    t->from_float(&x[r * n_in], m.bytes.data() + r * m.row_bytes, n_in);
    t->to_float(m.bytes.data() + r * m.row_bytes, &m.dequantized[r * n_in], n_in);
  }
  return m;
}

DeviceMatrix OnDevice(const HostMatrix& m, const DeviceArray<uint8_t>& bytes) {
  return DeviceMatrix{m.type, bytes.get(), m.row_bytes, m.n_out, m.n_in};
}

TEST_F(CudaKernelsTest, RmsNormMatchesCpuReference) {
  const int64_t rows = 7, n = 4096 + 13;
  std::vector<float> x = Random(rows * n, 5, 2.0f), w = Random(n, 6), want(rows * n);
  for (int64_t r = 0; r < rows; ++r) kernels::RmsNorm(&x[r * n], w.data(), &want[r * n], n, 1e-5f);
  DeviceArray<float> dx(x), dw(w), dout(rows * n);
  RmsNormRows(dx.get(), dw.get(), dout.get(), rows, n, 1e-5f, nullptr);
  EXPECT_LT(RelativeError(dout.Get(), want), 1e-5);
}

TEST_F(CudaKernelsTest, ElementwiseOpsMatchCpu) {
  const int64_t rows = 5, width = 256, hd = 64;
  const std::vector<float> x = Random(rows * width, 1), y = Random(rows * width, 2),
                           b = Random(width, 3), hw = Random(hd, 4);
  std::vector<float> add = x, bias = x, swiglu(rows * width), head = x;
  for (size_t i = 0; i < x.size(); ++i) add[i] += y[i];
  for (size_t i = 0; i < x.size(); ++i) bias[i] += b[i % width];
  kernels::SwiGlu(x.data(), y.data(), swiglu.data(), rows * width);
  for (int64_t h = 0; h < rows * width / hd; ++h) {
    kernels::RmsNorm(&head[h * hd], hw.data(), &head[h * hd], hd, 1e-6f);
  }
  DeviceArray<float> d_add(x), d_bias(x), d_gate(x), d_head(x), d_y(y), d_b(b), d_hw(hw);
  Add(d_add.get(), d_y.get(), rows * width, nullptr);
  AddBias(d_bias.get(), d_b.get(), rows, width, nullptr);
  SwiGlu(d_gate.get(), d_y.get(), rows * width, nullptr);
  HeadRmsNorm(d_head.get(), d_hw.get(), rows, width / hd, static_cast<int>(hd), 1e-6f, nullptr);
  EXPECT_EQ(d_add.Get(), add);
  EXPECT_EQ(d_bias.Get(), bias);
  EXPECT_LT(RelativeError(d_gate.Get(), swiglu), 1e-5);
  EXPECT_LT(RelativeError(d_head.Get(), head), 1e-5);

  const std::vector<int64_t> index = {4, 0, 2};
  DeviceArray<int64_t> d_index(index);
  DeviceArray<float> d_x(x), gathered(index.size() * width);
  GatherRows(d_x.get(), d_index.get(), 3, width, gathered.get(), nullptr);
  const std::vector<float> g = gathered.Get();
  for (size_t i = 0; i < index.size(); ++i) {
    for (int64_t c = 0; c < width; ++c) ASSERT_EQ(g[i * width + c], x[index[i] * width + c]);
  }

  std::vector<float> logits = Random(3 * 1000, 9);
  logits[1000 + 17] = 50.0f;
  logits[1000 + 400] = 50.0f;  // a tie: the lower index wins
  DeviceArray<float> d_logits(logits);
  DeviceArray<int32_t> best(3);
  ArgmaxRows(d_logits.get(), 3, 1000, best.get(), nullptr);
  const std::vector<int32_t> got = best.Get();
  for (int r = 0; r < 3; ++r) {
    const auto row = logits.begin() + r * 1000;
    EXPECT_EQ(got[r], std::max_element(row, row + 1000) - row);
  }
}

TEST_F(CudaKernelsTest, RopeIsBitExactWithTheCpuTable) {
  for (RopeStyle style : {RopeStyle::kAdjacentPairs, RopeStyle::kHalves}) {
    RopeConfig config;
    config.style = style;
    config.n_rot = 64;
    config.freq_base = 500000.0f;
    RopeTable table(config, {});
    const std::vector<int32_t> positions = {0, 1, 17, 300, 4095};
    table.Compute(positions);
    const int64_t heads = 4, hd = 64, width = heads * hd;
    std::vector<float> x = Random(positions.size() * width, 8), want = x;
    for (size_t t = 0; t < positions.size(); ++t) {
      for (int64_t h = 0; h < heads; ++h) table.Apply(t, &want[t * width + h * hd]);
    }
    const std::vector<float> cos_sin(table.table().begin(), table.table().end());
    DeviceArray<float> dx(x), dt(cos_sin);
    Rope(dx.get(), dt.get(), static_cast<int64_t>(positions.size()), width, 64, 64,
         style == RopeStyle::kAdjacentPairs, nullptr);
    const std::vector<float> got = dx.Get();
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(Bits(got[i]), Bits(want[i])) << i;
  }
}

TEST_F(CudaKernelsTest, EmbedRowsMatchToFloat) {
  for (TensorType type : kWeightTypes) {
    const HostMatrix m = MakeMatrix(type, 50, 512, 21);
    DeviceArray<uint8_t> bytes(m.bytes);
    const std::vector<int32_t> tokens = {3, 49, 0, 3};
    DeviceArray<int32_t> d_tokens(tokens);
    DeviceArray<float> out(tokens.size() * 512);
    EmbedRows(type, bytes.get(), m.row_bytes, d_tokens.get(), 4, 512, out.get(), nullptr);
    const std::vector<float> got = out.Get();
    for (size_t r = 0; r < tokens.size(); ++r) {
      for (int c = 0; c < 512; ++c) {
        ASSERT_EQ(Bits(got[r * 512 + c]), Bits(m.dequantized[tokens[r] * 512 + c]))
            << TensorTypeName(type);
      }
    }
  }
}

TEST_F(CudaKernelsTest, PlainMatMulMatchesTheCpuDot) {
  for (TensorType type : kWeightTypes) {
    const int64_t n_out = 96, n_in = 512, rows = 3, ldy = n_out + 5;
    const HostMatrix m = MakeMatrix(type, n_out, n_in, 31);
    const std::vector<float> x = Random(rows * n_in, 32);
    std::vector<float> want(rows * ldy, 0.0f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t o = 0; o < n_out; ++o) {
        double s = 0;
        for (int64_t i = 0; i < n_in; ++i)
          s += double{m.dequantized[o * n_in + i]} * x[r * n_in + i];
        want[r * ldy + o] = static_cast<float>(s);
      }
    }
    DeviceArray<uint8_t> bytes(m.bytes);
    DeviceArray<float> dx(x), y(rows * ldy);
    MatMulPlain(OnDevice(m, bytes), dx.get(), rows, y.get(), ldy, nullptr);
    EXPECT_LT(RelativeError(y.Get(), want), 1e-5) << TensorTypeName(type);
  }
}

TEST_F(CudaKernelsTest, DecodeMatVecsMatchThePlainKernel) {
  for (TensorType type : kWeightTypes) {
    for (int64_t rows : {1, 2, 5, 8, 13, 16, 32}) {  // each of the 8-, 16- and 32-row kernels
      const int64_t n_out = 300, n_in = 1024, ldy = n_out;
      const HostMatrix m = MakeMatrix(type, n_out, n_in, 41);
      const std::vector<float> x = Random(rows * n_in, 42);
      DeviceArray<uint8_t> bytes(m.bytes);
      DeviceArray<float> dx(x), plain(rows * ldy), fast(rows * ldy);
      DeviceArray<ActQ8> xq(rows * n_in / kGroup);
      const DeviceMatrix w = OnDevice(m, bytes);
      MatMulPlain(w, dx.get(), rows, plain.get(), ldy, nullptr);
      const bool quantized =
          type != TensorType::kF32 && type != TensorType::kF16 && type != TensorType::kBF16;
      if (quantized) {
        QuantizeActivations(dx.get(), rows, n_in, xq.get(), nullptr);
        MatVecQ8(w, xq.get(), rows, fast.get(), ldy, nullptr);
      } else {
        MatVecFloat(w, dx.get(), rows, fast.get(), ldy, nullptr);
      }
      // 8-bit activations cost about 1% of a dot's magnitude; float ones
      // only the summation order.
      EXPECT_LT(RelativeError(fast.Get(), plain.Get()), quantized ? 2e-2 : 1e-5)
          << TensorTypeName(type) << " rows " << rows;
    }
  }
}

TEST_F(CudaKernelsTest, DequantizedRowsForTheGemmMatchToFloat) {
  for (TensorType type : kWeightTypes) {
    const HostMatrix m = MakeMatrix(type, 40, 256, 51);
    DeviceArray<uint8_t> bytes(m.bytes);
    for (bool bf16 : {false, true}) {
      // At an aligned output (eight values a thread) and one value past it
      // (a value a thread).
      for (int skew : {0, 1}) {
        DeviceArray<uint16_t> out(10 * 256 + 1);
        DequantizeRows(OnDevice(m, bytes), 30, 10, bf16, out.get() + skew, nullptr);
        const std::vector<uint16_t> got = out.Get();
        for (int i = 0; i < 10 * 256; ++i) {
          const float v = m.dequantized[30 * 256 + i];
          ASSERT_EQ(got[skew + i], bf16 ? FloatToBf16(v) : FloatToHalf(v))
              << TensorTypeName(type) << " skew " << skew;
        }
      }
    }
  }
}

// A paged cache and a batch over it: two sequences, the second with a long
// context (several split-K chunks), block tables out of order.
struct PagedCase {
  int n_head = 8, n_head_kv = 2, hd = 64, bs = 16;
  std::vector<int32_t> positions, table_offset, tables;
  int32_t max_context = 0;
  int64_t n_tokens() const { return static_cast<int64_t>(positions.size()); }
};

PagedCase MakeCase(int n_head, int n_head_kv, int hd) {
  PagedCase c;
  c.n_head = n_head;
  c.n_head_kv = n_head_kv;
  c.hd = hd;
  // Sequence 0: prefill of positions 0..5. Sequence 1: decode at 700.
  for (int p = 0; p < 6; ++p) {
    c.positions.push_back(p);
    c.table_offset.push_back(0);
  }
  c.positions.push_back(700);
  c.table_offset.push_back(1);
  c.tables.push_back(60);  // sequence 0's one block
  for (int b = 0; b < 44; ++b) c.tables.push_back(59 - b);
  c.max_context = 701;
  return c;
}

TEST_F(CudaKernelsTest, KvWritesGiveTheCpuPageBytes) {
  struct Layout {
    TensorType type;
    bool min_error, center, rotate;
  };
  const Layout layouts[] = {{TensorType::kF16, true, false, false},
                            {TensorType::kBF16, true, false, true},
                            {TensorType::kQ8_0, true, true, false},
                            {TensorType::kQ4_0, false, false, true},
                            {TensorType::kQ4_0, true, true, true}};
  for (const Layout& l : layouts) {
    const PagedCase c = MakeCase(8, 2, 64);
    const int64_t n = c.n_tokens();
    const size_t row_bytes = kernels::RowSizeBytes(*kernels::GetReferenceTypeTraits(l.type), c.hd);
    const int64_t num_blocks = 64;
    const size_t page_rows = num_blocks * c.bs * c.n_head_kv;
    std::vector<float> q = Random(n * c.n_head * c.hd, 61), k = Random(n * c.n_head_kv * c.hd, 62),
                       v = Random(n * c.n_head_kv * c.hd, 63);
    const std::vector<float> mean = Random(c.n_head_kv * c.hd, 64, 0.5f);
    // The CPU: transforms, then the encoder, into the same rows.
    KvLayout layout;
    layout.n_layer = 1;
    layout.n_head_kv = c.n_head_kv;
    layout.head_dim = c.hd;
    layout.k_rotated = l.rotate;
    layout.v_rotated = l.rotate;
    if (l.center) {
      layout.k_bias = std::make_shared<KvBias>("m", "m", 1, c.n_head_kv, c.hd, 1, mean);
    }
    const KvEncodeFn encode =
        GetKvEncoder(l.type, l.min_error ? KvRounding::kMinError : KvRounding::kReference);
    std::vector<uint8_t> want_k(page_rows * row_bytes, 0), want_v(page_rows * row_bytes, 0);
    std::vector<float> want_q = q;
    for (int64_t t = 0; t < n; ++t) {
      for (int h = 0; h < c.n_head; ++h) TransformQuery(layout, &want_q[(t * c.n_head + h) * c.hd]);
      const int32_t pos = c.positions[t];
      const int32_t block = c.tables[c.table_offset[t] + pos / c.bs];
      for (int h = 0; h < c.n_head_kv; ++h) {
        std::vector<float> kr(&k[(t * c.n_head_kv + h) * c.hd],
                              &k[(t * c.n_head_kv + h + 1) * c.hd]);
        std::vector<float> vr(&v[(t * c.n_head_kv + h) * c.hd],
                              &v[(t * c.n_head_kv + h + 1) * c.hd]);
        TransformKey(layout, 0, h, kr.data());
        TransformValue(layout, vr.data());
        const size_t row = (static_cast<size_t>(block) * c.bs + pos % c.bs) * c.n_head_kv + h;
        encode(kr.data(), &want_k[row * row_bytes], c.hd);
        encode(vr.data(), &want_v[row * row_bytes], c.hd);
      }
    }
    DeviceArray<float> dq(q), dk(k), dv(v), dmean(mean);
    DeviceArray<uint8_t> pk(page_rows * row_bytes), pv(page_rows * row_bytes);
    DeviceArray<int32_t> dpos(c.positions), doff(c.table_offset), dtab(c.tables);
    KvWrite w{dq.get(), dk.get(), dv.get(),   c.n_head, c.hd, l.center ? dmean.get() : nullptr,
              l.rotate, l.rotate, l.min_error};
    PagedKv kv{pk.get(), pv.get(), l.type, l.type, row_bytes, row_bytes, c.bs, c.n_head_kv};
    StepTokens st{n, dpos.get(), doff.get(), dtab.get(), c.max_context};
    WriteKv(w, kv, st, nullptr);
    EXPECT_EQ(pk.Get(), want_k) << TensorTypeName(l.type);
    EXPECT_EQ(pv.Get(), want_v) << TensorTypeName(l.type);
    const std::vector<float> got_q = dq.Get();
    for (size_t i = 0; i < got_q.size(); ++i) ASSERT_EQ(Bits(got_q[i]), Bits(want_q[i]));
  }
}

TEST_F(CudaKernelsTest, AttentionPlainMatchesACpuReferenceAndSplitKAndTiledMatchPlain) {
  struct Shape {
    int n_head, n_head_kv, hd;
    TensorType type;
    bool rotated;
  };
  const Shape shapes[] = {{8, 2, 64, TensorType::kF16, false},
                          {32, 8, 128, TensorType::kQ8_0, true},
                          {4, 4, 64, TensorType::kQ4_0, false},
                          {16, 1, 32, TensorType::kF32, false},   // group 16: plain fallback
                          {6, 2, 48, TensorType::kBF16, false}};  // head 48: plain fallback
  for (const Shape& s : shapes) {
    const PagedCase c = MakeCase(s.n_head, s.n_head_kv, s.hd);
    const int64_t n = c.n_tokens();
    const kernels::TypeTraits* t = kernels::GetReferenceTypeTraits(s.type);
    const size_t row_bytes = kernels::RowSizeBytes(*t, c.hd);
    const size_t page_rows = 64 * c.bs * c.n_head_kv;
    // Pages of random rows in the storage type (as WriteKv leaves them).
    std::vector<uint8_t> k_pages(page_rows * row_bytes), v_pages(page_rows * row_bytes);
    const std::vector<float> kf = Random(page_rows * c.hd, 71), vf = Random(page_rows * c.hd, 72);
    for (size_t r = 0; r < page_rows; ++r) {
      t->from_float(&kf[r * c.hd], &k_pages[r * row_bytes], c.hd);
      t->from_float(&vf[r * c.hd], &v_pages[r * row_bytes], c.hd);
    }
    const std::vector<float> q = Random(n * c.n_head * c.hd, 73);
    const float scale = 1.0f / std::sqrt(static_cast<float>(c.hd));
    std::vector<float> want(n * c.n_head * c.hd);
    const int group = c.n_head / c.n_head_kv;
    for (int64_t tok = 0; tok < n; ++tok) {
      for (int h = 0; h < c.n_head; ++h) {
        const int kvh = h / group;
        const int ctx = c.positions[tok] + 1;
        std::vector<double> scores(ctx);
        std::vector<float> kr(c.hd), vr(c.hd);
        double mx = -1e300;
        for (int p = 0; p < ctx; ++p) {
          const int32_t block = c.tables[c.table_offset[tok] + p / c.bs];
          const size_t row = (static_cast<size_t>(block) * c.bs + p % c.bs) * c.n_head_kv + kvh;
          t->to_float(&k_pages[row * row_bytes], kr.data(), c.hd);
          double dot = 0;
          for (int d = 0; d < c.hd; ++d) dot += double{q[(tok * c.n_head + h) * c.hd + d]} * kr[d];
          scores[p] = dot * scale;
          mx = std::max(mx, scores[p]);
        }
        std::vector<double> out(c.hd, 0.0);
        double sum = 0;
        for (int p = 0; p < ctx; ++p) {
          const int32_t block = c.tables[c.table_offset[tok] + p / c.bs];
          const size_t row = (static_cast<size_t>(block) * c.bs + p % c.bs) * c.n_head_kv + kvh;
          t->to_float(&v_pages[row * row_bytes], vr.data(), c.hd);
          const double e = std::exp(scores[p] - mx);
          sum += e;
          for (int d = 0; d < c.hd; ++d) out[d] += e * vr[d];
        }
        std::vector<float> o(c.hd);
        for (int d = 0; d < c.hd; ++d) o[d] = static_cast<float>(out[d] / sum);
        if (s.rotated) HadamardTransform(o.data(), c.hd);
        std::copy(o.begin(), o.end(), &want[(tok * c.n_head + h) * c.hd]);
      }
    }
    DeviceArray<uint8_t> pk(k_pages), pv(v_pages);
    DeviceArray<int32_t> dpos(c.positions), doff(c.table_offset), dtab(c.tables);
    DeviceArray<float> dq(q), plain(want.size()), fast(want.size());
    PagedKv kv{pk.get(), pv.get(), s.type, s.type, row_bytes, row_bytes, c.bs, c.n_head_kv};
    StepTokens st{n, dpos.get(), doff.get(), dtab.get(), c.max_context};
    AttentionArgs a{dq.get(), plain.get(), c.n_head, c.hd, scale, s.rotated};
    AttentionPlain(a, kv, st, nullptr);
    EXPECT_LT(RelativeError(plain.Get(), want), 1e-4) << "head " << s.hd << " group " << group;
    // Split-K, with a scratch that holds the whole step and one that forces
    // several pieces.
    const int64_t per_token = AttentionScratchFloats(1, c.n_head, c.hd, c.max_context);
    for (int64_t tokens_in_scratch : {n, int64_t{2}}) {
      DeviceArray<float> scratch(per_token * tokens_in_scratch);
      a.out = fast.get();
      AttentionSplitK(a, kv, st, scratch.get(), per_token * tokens_in_scratch, nullptr);
      EXPECT_LT(RelativeError(fast.Get(), plain.Get()), 1e-5)
          << "head " << s.hd << " group " << group << " scratch tokens " << tokens_in_scratch;
    }
    // Tiled, one sequence at a time: the 6-token prefill (two tiles where
    // 16 query heads share a KV head), then the decode over 701 positions.
    DeviceArray<float> tiled(want.size());
    bool taken = true;
    for (const auto& [begin, count] : {std::pair<int64_t, int64_t>{0, 6}, {6, 1}}) {
      AttentionArgs sa{dq.get() + begin * c.n_head * c.hd,
                       tiled.get() + begin * c.n_head * c.hd,
                       c.n_head,
                       c.hd,
                       scale,
                       s.rotated};
      StepTokens sst{count, dpos.get() + begin, doff.get() + begin, dtab.get(), c.max_context};
      taken = AttentionTiled(sa, kv, sst, nullptr) && taken;
    }
    EXPECT_EQ(taken, c.hd == 32 || c.hd == 64 || c.hd == 128 || c.hd == 256)
        << "head " << s.hd << " group " << group;
    if (taken) {
      EXPECT_LT(RelativeError(tiled.Get(), plain.Get()), 1e-5)
          << "tiled: head " << s.hd << " group " << group;
    }
  }
}

TEST(CudaDeviceTest, ReportsAbsenceAsStatus) {
  auto count = DeviceCount();
  if (count.ok()) {
    EXPECT_GT(*count, 0);
  } else {
    EXPECT_EQ(count.status().code(), StatusCode::kUnavailable);
    std::printf("no GPU on this machine: %s\n", count.status().message().c_str());
  }
}

}  // namespace
}  // namespace kvmesh::cuda
